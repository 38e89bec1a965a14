"""Length filter: tokens of the reference and of the candidate (Wieting 2017 §5.4).

The papers tune ranges such as [0,10], [0,15] ... [30,100] on the translation's length;
ParaNMT keeps pairs whose sides are both at most 30 tokens (see selection's max_tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from paramill.filters.base import Batch, Column, Direction, Filter


@dataclass(frozen=True)
class Length(Filter):
    name = "length"
    doc = "Tokens of reference (length_ref) and candidate (length_cand)."
    order = 1
    reads_tokens = True

    def columns(self) -> list[Column]:
        return [Column("length_ref", Direction.RANGE, "tokens in the reference", pa.int32()),
                Column("length_cand", Direction.RANGE, "tokens in the candidate", pa.int32())]

    def score(self, batch: Batch) -> dict[str, Any]:
        ref, cand = batch.lengths()
        return {"length_ref": ref, "length_cand": cand}
