"""Shared test helpers: small files in every compression paramill reads."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pytest
import zstandard

REPO = Path(__file__).resolve().parents[1]


def compress(data: bytes, kind: str) -> bytes:
    if kind == "gz":
        return gzip.compress(data, mtime=0)
    if kind == "xz":
        return lzma.compress(data)
    if kind == "zst":
        return zstandard.ZstdCompressor().compress(data)
    if kind == "bz2":
        return bz2.compress(data)
    return data


@pytest.fixture
def write_file(tmp_path):
    """write_file(name, lines_or_bytes, kind="plain") -> Path, compressed as asked."""

    def _write(name: str, content, kind: str = "plain") -> Path:
        if isinstance(content, (list, tuple)):
            content = b"".join((c.encode() if isinstance(c, str) else c) + b"\n" for c in content)
        elif isinstance(content, str):
            content = content.encode()
        path = tmp_path / name
        path.write_bytes(compress(content, kind))
        return path

    return _write
