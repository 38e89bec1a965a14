# Input functions: which files each rule reads, from the resolved config and the shards the
# clean checkpoints wrote. Glue only (paths); what a filter needs comes from its declaration
# in paramill.filters (carried by the generated schema), the sweep grid from paramill.embed.


# -- bitext --------------------------------------------------------------------

def corpus_files(wildcards):
    """The files of a bitext corpus, as its format names them."""
    return CorpusSpec.from_dict(wildcards.corpus, config["bitext"]["corpora"][wildcards.corpus]).files


def earlier_keys(wildcards):
    """Key files of the corpora listed before this one: their pairs win duplicates."""
    before = CORPORA[: CORPORA.index(wildcards.corpus)]
    return [f"{WORK}/clean/{c}.keys.parquet" for c in before]


def corpus_shards(corpus):
    """Cleaned shard names of a corpus (known once its clean checkpoint has run)."""
    shards_dir = checkpoints.clean.get(corpus=corpus).output.shards
    return sorted(p.stem for p in Path(shards_dir).glob("shard-*.parquet"))


# -- pairs ---------------------------------------------------------------------

def pair_corpus_files(wildcards):
    """The files of a pair corpus, as its format names them (references: the reference and
    every system's output)."""
    return PairCorpusSpec.from_dict(wildcards.corpus,
                                    config["pairs"]["corpora"][wildcards.corpus]).files


def earlier_pair_corpora(wildcards):
    """Output folders of the pair corpora listed before this one: their pairs win duplicates."""
    before = PAIR_CORPORA[: PAIR_CORPORA.index(wildcards.corpus)]
    return [f"{WORK}/pairs/{c}" for c in before]


def pair_shards(corpus):
    """Candidate shard names of a pair corpus (known once its ingest checkpoint has run)."""
    shards_dir = checkpoints.pairs_ingest.get(corpus=corpus).output[0]
    return sorted(p.stem for p in Path(shards_dir).glob("shard-*.parquet"))


# -- candidates of both kinds --------------------------------------------------

def candidate_file(corpus, shard):
    """A candidate shard: back-translated (bitext) or as a pair corpus gives it."""
    if corpus in PAIR_CORPORA:
        return f"{WORK}/pairs/{corpus}/{shard}.parquet"
    return f"{WORK}/candidates/{corpus}/{shard}.parquet"


def shards_of(corpus):
    return pair_shards(corpus) if corpus in PAIR_CORPORA else corpus_shards(corpus)


def candidate_files(corpora):
    return [candidate_file(c, s) for c in corpora for s in shards_of(c)]


# -- nmt -----------------------------------------------------------------------

def nmt_corpora():
    return config["nmt"]["train_corpora"] or CORPORA


def training_shards(wildcards):
    """Every cleaned shard of the corpora that train the subword and NMT models."""
    return [f"{WORK}/shards/{c}/{s}.parquet" for c in nmt_corpora() for s in corpus_shards(c)]


def back_translated(wildcards):
    """The back-translated candidate table of every shard of every bitext corpus."""
    return candidate_files(CORPORA)


def all_candidates(wildcards):
    """Every candidate shard: back-translated, then the pair corpora's."""
    return candidate_files(CORPORA + PAIR_CORPORA)


def own_model(direction):
    return config["nmt"]["models"].get(direction)


def spm_model(direction, side):
    """SentencePiece model of a direction's source or target side (own or trained)."""
    own = own_model(direction)
    if own:
        return ancient(own[f"{side}_spm"])
    lang = direction.split("-")[0 if side == "source" else 1]
    return f"{WORK}/nmt/spm/{lang}.model"


def checkpoint_to_convert(wildcards):
    own = own_model(wildcards.direction)
    if own and own.get("checkpoint"):
        return ancient(own["checkpoint"])
    return f"{WORK}/nmt/{wildcards.direction}/model.pt"


def translation_model(direction):
    """The CTranslate2 model of a direction: the user's own, or converted here."""
    own = own_model(direction)
    if own and own.get("ct2"):
        return ancient(own["ct2"])
    return f"{WORK}/nmt/{direction}/ct2"


def sampling():
    return config["nmt"]["translate"]["method"] == "sample"


def nmt_translate_inputs(wildcards):
    files = {
        "shard": f"{WORK}/shards/{wildcards.corpus}/{wildcards.shard}.parquet",
        "model": translation_model("cs-en"),
        "src_spm": spm_model("cs-en", "source"),
        "tgt_spm": spm_model("cs-en", "target"),
    }
    if sampling():  # dual scoring needs the reverse model
        files["bwd"] = translation_model("en-cs")
    return files


# -- filters -------------------------------------------------------------------

FILTERS = config["filters"]["enabled"]


def heldout_candidates(wildcards):
    """Candidate tables the held-out pairs are drawn from (filters.heldout.corpora)."""
    return candidate_files(config["filters"]["heldout"]["corpora"] or CORPORA + PAIR_CORPORA)


def release_names():
    return ["default", *config["filters"]["releases"]]


def release_settings(name):
    """`filters.select` overlaid with the named variant (`default` is `select` itself)."""
    if name == "default":
        return config["filters"]["select"]
    return {**config["filters"]["select"], **config["filters"]["releases"][name]}


def filter_applies(name, corpus):
    """A filter runs on a pair corpus unless it needs the Czech side or the decoder's cost."""
    facts = FILTER_FACTS[name]
    return corpus not in PAIR_CORPORA or not (facts.get("x-needs-source")
                                              or facts.get("x-needs-decoder"))


def score_files(wildcards):
    """Every enabled filter's score table of every candidate shard it applies to."""
    return [
        f"{WORK}/scores/{f}/{c}/{s}.parquet"
        for f in FILTERS
        for c in CORPORA + PAIR_CORPORA
        if filter_applies(f, c)
        for s in shards_of(c)
    ]


def parascore_model():
    given = config["filters"]["parascore"]["model"]
    return ancient(given) if given else f"{WORK}/filters/parascore/model.pt"


#: what each filter declares (paramill.filters.<name>), as the generated schema carries it
FILTER_FACTS = config_schema()["properties"]["filters"]["properties"]
MODEL_FILES = {  # the models a filter may declare (paramill.filters.base.MODEL_KINDS)
    "kenlm": lambda: f"{WORK}/filters/kenlm/lm.binary",
    "classifier": lambda: f"{WORK}/filters/classifier/model.pt",
    "parascore": parascore_model,
    "ct2:cs-en": lambda: translation_model("cs-en"),
    "ct2:en-cs": lambda: translation_model("en-cs"),
    "spm:cs": lambda: spm_model("cs-en", "source"),
    "spm:en": lambda: spm_model("cs-en", "target"),
}


def filter_models(name):
    """Models a filter scores with, as {its field: path}."""
    return {field: MODEL_FILES[kind]() for field, kind in FILTER_FACTS[name].get("x-models", {}).items()}


def filter_inputs(name):
    """Input function of a score rule: the shard's candidates, the filter's models, the
    bitext shard when the filter needs the Czech side, and the shard's token table when the
    filter reads it."""

    def inputs(wildcards):
        files = {"candidates": candidate_file(wildcards.corpus, wildcards.shard)}
        if FILTER_FACTS[name].get("x-needs-source"):
            files["source"] = f"{WORK}/shards/{wildcards.corpus}/{wildcards.shard}.parquet"
        if FILTER_FACTS[name].get("x-reads-tokens"):
            files["tokens"] = f"{WORK}/tokens/{wildcards.corpus}/{wildcards.shard}.parquet"
        return {**files, **filter_models(name)}

    return inputs


def filter_model_args(name):
    """params function: the score command's models (and source shard) as JSON."""

    def args(wildcards, input):
        return as_json({k: str(input[k]) for k in input.keys() if k != "candidates"})

    return args


# -- embed ---------------------------------------------------------------------

def embed_settings(name):
    """(model spec, training settings, release) of a named model or a sweep point."""
    return model_settings(config["embed"], name)


def embed_train_params(train):
    """A model's training settings as its rule's params: without the launch-only keys, which
    every training job takes from embed.train through EMBED_TRAIN_LAUNCH (no model or sweep
    point sets them apart: the sweep's axes are fixed, paramill.embed.sweep.AXES)."""
    return as_json(rule_params(train, "embed", "train"))


def embed_pairs(wildcards):
    """The released corpus a model trains on."""
    return f"{RESULTS}/corpus/{embed_settings(wildcards.model)[2]}/corpus.parquet"


def sts_paths():
    """Every file of the STS sets, as their formats name them (senteval: input and gold)."""
    return [f for d in config["evaluate"]["sts"] for f in layout_files(d["format"], d["path"])]


# -- twitter -------------------------------------------------------------------

def stopped_days(month=""):
    """Days of ``month`` before the latest live harvest whose harvest saved pages and stopped
    before its table (a time limit, a lost node, a refused request): their tweets are past
    every cursor, so the month's job builds the day's table from its pages (no request). The
    latest day is left to its own harvest, which may still be running."""
    if config["twitter"]["source"] != "live":
        return set()
    folders = sorted(p for p in Path(config["twitter"]["raw_dir"]).glob("????-??-??")
                     if p.is_dir() and p.name.replace("-", "").isdigit())
    return {p.name for p in folders[:-1] if p.name.startswith(month) and any(p.iterdir())}


def twitter_days(month=""):
    """The days of ``month`` (every month: "") a month's job reads: the configured dates, the
    days already harvested (periodic runs) and those whose harvest stopped part way."""
    days = {d for d in config["twitter"]["dates"] if d.startswith(month)} | stopped_days(month)
    days |= {p.stem for p in Path(f"{WORK}/twitter/harvest").glob(f"{month}*.parquet")}
    return sorted(days)


def twitter_months():
    """Months of the configured dates and of the days already harvested."""
    return sorted({d[:7] for d in twitter_days()})


def growth_stats(wildcards):
    """Each month's stats: the months of the configured dates and of the days harvested."""
    months = twitter_months()
    if not months:
        raise WorkflowError(f"{RESULTS}/twitter/growth.tsv: no month to count yet: twitter.dates "
                            f"is empty and no day is harvested in {WORK}/twitter/harvest "
                            "(scripts/harvest.sh harvests today)")
    return [f"{RESULTS}/twitter/{m}/stats.json" for m in months]


def month_days(wildcards):
    """The day tables of the month (:func:`twitter_days`)."""
    return [f"{WORK}/twitter/harvest/{d}.parquet" for d in twitter_days(wildcards.month)]


def month_context_days(wildcards):
    """The day tables of the twitter.pairs.context_days days before the month
    (`paramill.twitter.months.days_before`), of the days :func:`twitter_days` knows: their
    tweets pair with the month's (a URL's later tweets are filed under the days after its
    news tweet's)."""
    earliest, _ = days_before(wildcards.month, config["twitter"]["pairs"]["context_days"])
    return [f"{WORK}/twitter/harvest/{d}.parquet" for d in twitter_days(month_before(wildcards.month))
            if d >= earliest]


def identify_labelled():
    """The identifier's labelled files (and PIT-2015 test's separate label files)."""
    sets = config["twitter"]["identify"]["train"] + config["twitter"]["identify"]["evaluate"]
    return ([f for d in sets for f in layout_files(d["format"], d["path"])]
            + [d["labels"] for d in sets if d.get("labels")])


def identify_distill_text():
    """The unlabelled text a student identifier is distilled on (encoder_layers > 0 only)."""
    identify = config["twitter"]["identify"]
    if identify["model"] != "encoder" or not identify["encoder_layers"]:
        return []
    return list(identify["distill_text"])


def identify_embed_model():
    """The identifier's embedding model: a name in embed.models, a path, or none."""
    name = config["twitter"]["identify"]["embed_model"]
    if not name:
        return []
    if name in config["embed"]["models"]:
        return f"{WORK}/embed/{name}/model.pt"
    return ancient(name)


# -- report --------------------------------------------------------------------

def default_targets():
    """What `snakemake` builds by default (the provenance table, which follows them all,
    aside): the diversity table when sampling, the lexicon (with SimLex when given), the
    Twitter branch when enabled."""
    targets = []
    if CORPORA:  # bitext: its statistics and the back-translation
        targets += [f"{RESULTS}/bitext/stats.json", f"{RESULTS}/bitext/outcomes.tsv",
                    f"{RESULTS}/nmt/backtranslation.json",
                    f"{WORK}/nmt/en-cs/ct2", f"{RESULTS}/report/bitext_outcomes.png"]
    if PAIR_CORPORA:
        targets += [f"{RESULTS}/pairs/stats.json", f"{RESULTS}/pairs/scores_by_method.tsv"]
    if CORPORA or PAIR_CORPORA:  # the releases and what is made of them
        targets += [f"{RESULTS}/corpus/{s}/{f}" for s in release_names()
                    for f in ("datasheet.md", "corpus.paranmt.txt")]
        targets += [f"{RESULTS}/embed/{m}/sts.tsv" for m in config["embed"]["models"]]
        if config["embed"]["export"]:
            targets += [f"{RESULTS}/embed/{m}/sentence-transformers" for m in config["embed"]["models"]]
        targets += [f"{RESULTS}/nmt/diversity.tsv"] if sampling() and CORPORA else []
        targets.append(f"{RESULTS}/lexicon/simlex.tsv" if config["lexicon"]["simlex"]
                       else f"{RESULTS}/lexicon/lexicon.tsv")
    if config["twitter"]["enabled"]:  # the growth table once a month has a day to count
        targets += [f"{RESULTS}/twitter/growth.tsv"] if twitter_months() else []
        targets.append(f"{RESULTS}/twitter/paraid.json")
    return targets
