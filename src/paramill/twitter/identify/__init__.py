"""Paraphrase identification for tweet pairs (Lan et al. 2017, PIT-2015 baseline).

Baseline: logistic regression on the 18 features of Das & Smith (2009) as used by the
PIT-2015 baseline: precision, recall and F1 of shared 1-, 2- and 3-grams, on lower-cased
tokens and on their Porter stems (3 x 3 x 2). Extended: those plus cheap signals — the
cosine under a paraphrastic embedding model (``paramill.embed``), the character-level
similarity of the comparable texts (rapidfuzz ratio), the length ratio, the token-set
Jaccard, and (``idf_overlap``) the precision, recall and F1 of the shared words' inverse
document frequency, counted on the training sentences. Evaluation is max F1 over the
precision-recall curve, with its precision and recall, as the paper reports.

Labelled data: Twitter URL corpus raw (``s1\\ts2\\t(n,6)\\turl``: n<=2 negative, n>=4
positive, n=3 dropped), its tokenised form (``a.toks``, ``b.toks``, ``sim.txt``), or
PIT-2015 as the task defines its two releases: train/dev carry the crowd's ``(pos, neg)``
votes (pos>=3 positive, pos<=1 negative, pos=2 dropped as debatable); test carries one
expert score on the 0-5 scale, in the data's label column or in the separate ``test.label``
(``true|false|----\\t<score>``; give it as ``labels``): 4-5 positive, 0-2 negative, 3
dropped, as the official scorer does.

The package, one module per concern: :mod:`.settings` (the config section),
:mod:`.data` (labelled and unlabelled data), :mod:`.featurise` (features),
:mod:`.evaluation` (folds, metrics, thresholds), :mod:`.training` (the fine-tuned and
cross-fitted encoders), :mod:`.leak` (the embedding model's overlap with the labels) and
:mod:`.model` (the fitted :class:`Identifier`) and :mod:`.fitting` (fitting it:
:func:`train_identifier`, the ``twitter identify`` verb). Its names are re-exported here.
"""

from paramill.twitter.encoder import PretrainedEncoder
from paramill.twitter.identify.data import (
    MAX_TEXT_LINE_BYTES,
    read_labelled,
    unlabelled_sentences,
)
from paramill.twitter.identify.evaluation import (
    LinearModel,
    at_threshold,
    cross_validate,
    fit,
    grouped_folds,
    holdout,
    max_f1,
    metrics,
    out_of_fold,
    source_groups,
    threshold_for_precision,
)
from paramill.twitter.identify.featurise import (
    BASELINE,
    EXTRA,
    IDF,
    MODELS,
    DocumentFrequencies,
    baseline_features,
    extra_features,
    features,
    fold_idf,
    idf_overlap,
    model_features,
    prf,
    stem,
    training_idf,
    words,
)
from paramill.twitter.identify.leak import (
    EmbeddingLeak,
    check_embedding_overlap,
    embedding_overlap,
    embedding_training_files,
    pair_key,
)
from paramill.twitter.identify.fitting import train_identifier
from paramill.twitter.identify.model import Identifier
from paramill.twitter.identify.settings import FORMATS, IdentifySettings, LabelledData
from paramill.twitter.identify.training import (
    crossfit,
    crossfit_cosine,
    crossfit_cross,
    distill_student,
    finetune_on,
)

__all__ = [
    "BASELINE", "EXTRA", "FORMATS", "IDF", "MAX_TEXT_LINE_BYTES", "MODELS", "DocumentFrequencies",
    "EmbeddingLeak", "Identifier", "IdentifySettings", "LabelledData", "LinearModel",
    "PretrainedEncoder", "at_threshold", "fold_idf", "idf_overlap", "training_idf",
    "baseline_features", "check_embedding_overlap", "cross_validate", "crossfit",
    "crossfit_cosine", "crossfit_cross", "distill_student", "embedding_overlap",
    "embedding_training_files", "extra_features", "features", "finetune_on", "fit",
    "grouped_folds", "max_f1", "metrics", "model_features", "out_of_fold", "pair_key", "prf",
    "holdout", "read_labelled", "source_groups", "stem", "threshold_for_precision",
    "train_identifier", "unlabelled_sentences", "words",
]
