"""Names of the MT systems of a ``references`` corpus. Pure Python (no pyarrow): the workflow
imports it to list a corpus's files."""

from __future__ import annotations

import glob
import os
import re


def systems(hypotheses: dict[str, str] | list[str]) -> dict[str, str]:
    """Name the MT systems of ``hypotheses``: a mapping as given, or files (globs expanded,
    sorted) named by their base names less the longest prefix and suffix all share."""
    if isinstance(hypotheses, dict):
        return dict(hypotheses)
    files: list[str] = []
    for entry in hypotheses:
        found = sorted(glob.glob(entry)) if glob.has_magic(entry) else [entry]
        if not found:
            raise FileNotFoundError(f"no file matches {entry!r}")
        files += [f for f in found if f not in files]
    if len(files) == 1:
        return {os.path.basename(files[0]): files[0]}
    names = [os.path.basename(f) for f in files]
    # shared prefix and suffix, cut at a separator so that `hyp.sysA` stays `sysA`
    prefix = re.sub(r"[^._]*$", "", os.path.commonprefix(names))
    suffix = re.sub(r"^[^._]*", "", os.path.commonprefix([n[::-1] for n in names])[::-1])
    stems = [n[len(prefix):len(n) - len(suffix)] for n in names]
    if len(set(stems)) != len(stems) or not all(stems):
        stems = names
    return dict(zip(stems, files))
