"""``paramill embed encode``: a text file's lines into a .npy of their vectors, in bounded
memory (a block of lines at a time, appended to the array's file)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np

from paramill.embed.model import load_model
from paramill.errors import InputError
from paramill.formats.reading import strict_lines
from paramill.io.outputs import atomic_output
from paramill.run.progress import progress


#: lines of a text file read and encoded at a time by :func:`encode_file`
ENCODE_BLOCK = 16_384


def encode_file(model_path: str | Path, text: str | Path, out: str | Path, batch_size: int = 256,
                block: int = ENCODE_BLOCK) -> tuple[int, int, list[dict[str, Any]]]:
    """Encode each line of ``text`` into the .npy ``out`` (float32, a row a line), ``block``
    lines at a time, each block's rows appended to the array under a temporary name: memory
    holds a block, however long the file. The file is checked and counted first (a bad line is an
    :class:`~paramill.errors.InputError` naming file and line before any work). Returns the
    rows, the dimension and the batch sizes halved for the GPU's memory."""
    rows = sum(1 for _ in strict_lines(text))
    model = load_model(model_path)
    with atomic_output(out) as (tmp,), open(tmp, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")),
                                                  "fortran_order": False, "shape": (rows, model.dim)})
        lines = (line for _, line in strict_lines(text))
        done = 0
        with progress("encoding", unit="sentences", total=rows) as bar:
            while chunk := list(itertools.islice(lines, block)):
                vectors = model.encode(chunk, batch_size, command="embed encode")
                fh.write(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
                done += len(chunk)
                bar.update(len(chunk))
        if done != rows:
            raise InputError(text, None, f"{done} lines read to encode, {rows} when counted: the "
                             "file changed while it was encoded")
    return rows, model.dim, model.out_of_gpu_memory
