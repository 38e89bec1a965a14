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
    parallel = True

    def columns(self) -> list[Column]:
        return [Column("length_ref", Direction.RANGE, "tokens in the reference", pa.int32()),
                Column("length_cand", Direction.RANGE, "tokens in the candidate", pa.int32())]

    def score(self, batch: Batch) -> dict[str, Any]:
        return {"length_ref": [len(t) for t in batch.ref_tokens],
                "length_cand": [len(t) for t in batch.candidate_tokens]}
