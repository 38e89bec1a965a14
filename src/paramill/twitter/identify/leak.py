"""The leak check: how many of the labelled pairs the cosine's embedding model was trained
on (its provenance names its training files), and the error when too many were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paramill.twitter.tweettext import comparable


def pair_key(s1: str, s2: str) -> tuple[str, str]:
    """A pair compared as ``comparable`` text, in either order."""
    a, b = comparable(s1), comparable(s2)
    return (a, b) if a <= b else (b, a)


def embedding_training_files(model: str | Path) -> list[str] | None:
    """The files an embedding model was trained on, from its provenance record (None when
    it has none: a model made elsewhere)."""
    from paramill.provenance import prov_path

    record = Path(prov_path(model))
    if not record.exists():
        return None
    import json

    entries = json.loads(record.read_text(encoding="utf-8")).get("inputs", [])
    return sorted({e["path"] for e in entries if Path(e["path"]).is_file()})


def embedding_overlap(model: str | Path, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """How many of ``pairs`` the embedding model was trained on (either order, compared as
    ``comparable`` text): one streamed pass over its training files."""
    files = embedding_training_files(model)
    report: dict[str, Any] = {"model": str(model), "labelled_pairs": len(pairs), "files": files}
    if files is None:
        return {**report, "checked": False, "seen": None, "share": None}
    from paramill.embed.data import PairSource

    wanted = {pair_key(x, y) for x, y in pairs}
    seen: set[tuple[str, str]] = set()
    for s1s, s2s in PairSource.from_files(files, drop_identical=False):
        for x, y in zip(s1s, s2s):
            key = pair_key(x, y)
            if key in wanted:
                seen.add(key)
    n = sum(pair_key(x, y) in seen for x, y in pairs)
    return {**report, "checked": True, "seen": n, "share": round(n / max(len(pairs), 1), 4)}


class EmbeddingLeak(ValueError):
    """The cosine's embedding model was trained on the identifier's labelled pairs."""


def check_embedding_overlap(overlap: dict[str, Any], limit: float) -> None:
    if overlap["checked"] and overlap["share"] > limit:
        raise EmbeddingLeak(
            f"the embedding model {overlap['model']} was trained on {overlap['seen']:,} of the "
            f"identifier's {overlap['labelled_pairs']:,} labelled pairs ({overlap['share']:.1%}; "
            f"files: {', '.join(overlap['files'])}): its cosine would carry their labels into "
            f"the identifier (in-sample F1 inflated, held-out F1 lower). Give "
            f"twitter.identify.embed_model a model trained without these pairs (a release "
            f"that leaves their pair corpus out), or null for no cosine "
            f"(twitter.identify.max_embed_overlap: {limit}).")
