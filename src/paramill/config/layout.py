"""The settings a user sets, apart from the ones only tuning needs. A config file holds a
stage's advanced keys under the stage's ``advanced:`` section, in their own sub-sections
(``nmt.advanced.train.bucket_size``); the stages read every key where it is declared
(``nmt.train.bucket_size``). This module moves keys between the two layouts: the schema
users see, and the config they write, ``unfolded``; what the stages read ``folded``."""

from __future__ import annotations

import copy
import re
from typing import Any

#: the keys only tuning needs, by the section that declares them: memory bounds, batch
#: sizes, devices and engines, internal seeds, the models' inner sizes, the harvest's
#: plumbing, the identifier's training schedule
ADVANCED: dict[str, tuple[str, ...]] = {
    "bitext.ingest": ("max_line_bytes", "batch_rows"),
    "bitext.clean": ("normalize_punctuation", "drop_identical", "dedup", "bucket_rows"),
    "pairs.ingest": ("max_line_bytes", "batch_rows"),
    "pairs.clean": ("normalize_punctuation", "dedup", "bucket_rows"),
    "nmt": ("quantization",),
    "nmt.spm": ("character_coverage", "model_type", "input_sentence_size", "seed"),
    "nmt.train": ("batch_type", "accum_count", "optim", "decay_method", "warmup_steps",
                  "label_smoothing", "save_checkpoint_steps", "valid_steps", "keep_checkpoint",
                  "bucket_size", "subword_nbest", "subword_alpha", "seed"),
    "nmt.translate": ("batch_size", "batch_type", "length_penalty", "max_decoding_length",
                      "min_decoding_length", "compute_type", "device", "engine"),
    "nmt.sample": ("max_iter", "strategy", "block", "batch_size", "max_decoding_length", "seed",
                   "device", "engine"),
    "embed.model": ("sp_model_type", "sp_character_coverage", "sp_input_sentences", "lowercase",
                    "min_count", "max_vocab", "init_std"),
    "embed.train": ("scramble_rate", "grad_clip", "max_chars", "buffer_pairs", "seed",
                    "linked_negatives", "device", "recurrent_pass_rows", "cuda_graph",
                    "recurrent_cuda_graph", "tf32", "checkpoint_minutes"),
    "filters.heldout": ("valid", "test", "seed"),
    "filters.overlap": ("orders", "lowercase"),
    "filters.bleu": ("method", "smooth_value", "lowercase"),
    "filters.kenlm": ("order", "discount_fallback", "lowercase", "memory"),
    "filters.classifier": ("dim", "hidden", "epochs", "batch_size", "score_batch_size",
                           "learning_rate", "seed", "device"),
    "filters.parascore": ("components", "batch_size"),
    "filters.dual_xent": ("batch_size", "batch_type", "device"),
    "filters.select": ("drop_identical", "dedup", "near_ngram", "exclude_heldout", "seed",
                       "paranmt_score"),
    "filters.analysis": ("sample", "idf_corpus", "parascore_edges", "annotate", "seed"),
    "twitter.harvest": ("bearer_token_env", "consumer_key_env", "consumer_secret_env",
                        "access_token_env", "access_token_secret_env", "max_results",
                        "max_pages", "retries", "backoff", "backoff_max", "expand_all",
                        "url_timeout", "url_workers", "search_languages", "max_query_chars",
                        "api_url", "api_timeout"),
    "twitter.pairs": ("languages", "context_days"),
    "twitter.identify": ("encoder_batch", "encoder_precision", "encoder_layers",
                         "distill_epochs", "distill_lr", "distill_batch", "distill_text",
                         "distill_max_sentences", "finetune_epochs", "finetune_lr",
                         "finetune_batch", "finetune_scale", "folds", "max_embed_overlap",
                         "idf_overlap", "token_alignment", "c", "max_iter", "seed"),
    "lexicon": ("lowercase", "stopwords", "smoothing", "chunk_pairs", "partitions",
                "spill_rows", "top_k", "token_pattern", "word_pattern"),
}
KEY = "advanced"


def paths() -> dict[str, str]:
    """Every advanced key's place where it is declared -> its place in a config file
    (``nmt.train.bucket_size`` -> ``nmt.advanced.train.bucket_size``)."""
    out = {}
    for section, keys in ADVANCED.items():
        stage, _, rest = section.partition(".")
        for key in keys:
            out[f"{section}.{key}"] = ".".join([stage, KEY, *([rest] if rest else []), key])
    return out


def _child(node: dict[str, Any], name: str) -> dict[str, Any]:
    return node["properties"][name]


def unfold_schema(folded: dict[str, Any]) -> dict[str, Any]:
    """The schema users see: each stage's advanced keys moved from their sections into the
    stage's ``advanced`` object, in sub-objects named as the sections (marked ``x-advanced``)."""
    schema = copy.deepcopy(folded)
    stages: dict[str, dict[str, Any]] = {}
    for section, keys in ADVANCED.items():
        stage, *rest = section.split(".")
        source = schema["properties"][stage]
        for part in rest:
            source = _child(source, part)
        target = stages.setdefault(stage, {
            "type": "object", "additionalProperties": False, "properties": {}, "default": {},
            "description": f"Settings of {stage} that only tuning needs: memory bounds, batch "
                           "sizes, devices, inner sizes and schedules. Their defaults fit most runs."})
        for part in rest:
            inner = _child(schema["properties"][stage], rest[0]) if part == rest[0] else None
            target = target["properties"].setdefault(part, {
                "type": "object", "additionalProperties": False, "properties": {}, "default": {},
                "description": f"Advanced settings of {section}. "
                               + (inner or {}).get("description", "")})
        for key in keys:
            node = source["properties"].pop(key)
            target["properties"][key] = {**node, "x-advanced": True}
    for stage, node in stages.items():
        schema["properties"][stage]["properties"][KEY] = node
    _written(schema)
    return schema


def _written(node: Any) -> None:
    """Every description under ``node`` naming keys as a config file holds them."""
    if isinstance(node, dict):
        if isinstance(node.get("description"), str):
            node["description"] = as_written(node["description"])
        for value in node.values():
            _written(value)
    elif isinstance(node, list):
        for value in node:
            _written(value)


def fold_schema(unfolded: dict[str, Any]) -> dict[str, Any]:
    """The schema the stages read: :func:`unfold_schema` undone."""
    schema = copy.deepcopy(unfolded)
    for section, keys in ADVANCED.items():
        stage, *rest = section.split(".")
        source = schema["properties"][stage]["properties"][KEY]
        target = schema["properties"][stage]
        for part in rest:
            source, target = _child(source, part), _child(target, part)
        for key in keys:
            node = dict(source["properties"][key])
            node.pop("x-advanced", None)
            target["properties"][key] = node
    for stage in {s.split(".")[0] for s in ADVANCED}:
        schema["properties"][stage]["properties"].pop(KEY, None)
    return schema


def misplaced(config: dict[str, Any]) -> list[str]:
    """An advanced key set where it is declared, not under its stage's ``advanced``: one
    problem each, naming its place in a config file."""
    problems = []
    for folded, unfolded in paths().items():
        node: Any = config
        for part in folded.split("."):
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                break
        else:
            problems.append(f"config key {folded}: set it as {unfolded} (settings only tuning "
                            f"needs are under {unfolded.split('.')[0]}.{KEY})")
    return problems


def fold(config: dict[str, Any]) -> dict[str, Any]:
    """A config as the stages read it: each stage's ``advanced`` keys laid over its sections."""
    config = copy.deepcopy(config)
    for stage in {s.split(".")[0] for s in ADVANCED}:
        section = config.get(stage)
        if isinstance(section, dict) and isinstance(section.get(KEY), dict):
            _merge(section, section.pop(KEY))
    return config


def _merge(into: dict[str, Any], over: dict[str, Any]) -> None:
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def unfold(config: dict[str, Any]) -> dict[str, Any]:
    """A resolved config as a config file holds it (advanced keys under ``advanced``)."""
    config = copy.deepcopy(config)
    for folded, unfolded in paths().items():
        *parents, key = folded.split(".")
        node = config
        for part in parents:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if not isinstance(node, dict) or key not in node:
            continue
        value = node.pop(key)
        target = config
        for part in unfolded.split(".")[:-1]:
            target = target.setdefault(part, {})
        target[key] = value
    return config


_PLACES = sorted(paths().items(), key=lambda item: -len(item[0]))
_PATTERN = re.compile("|".join(rf"(?<![\w.]){re.escape(f)}(?![\w])" for f, _ in _PLACES))


def as_written(message: str) -> str:
    """``message`` with every advanced key's declared place replaced by its place in a
    config file, as the user writes it."""
    places = dict(_PLACES)
    return _PATTERN.sub(lambda m: places[m.group(0)], message)
