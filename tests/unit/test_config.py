from dataclasses import asdict

from paramill.filters import filter_class
from paramill.filters.analysis import AnalysisSettings
from paramill.filters.classifier import ClassifierSettings
from paramill.filters.heldout import HeldoutSettings
from paramill.filters.kenlm import KenlmSettings
from paramill.filters.select import SelectSettings
from pathlib import Path

import pytest

from paramill import config
from paramill.config import checks
from paramill.io.yamlfiles import ConfigError, check_expanded
from paramill.bitext.clean import CleanSettings
from paramill.bitext.ingest import IngestSettings
from paramill.embed.model import ModelSpec
from paramill.embed.train import EmbedTrainSettings
from paramill.nmt.subwords import SubwordSettings
from paramill.nmt.train import ModelSettings, NmtTrainSettings
from paramill.nmt.translate import TranslateSettings

REPO = Path(__file__).resolve().parents[2]


def test_the_committed_schema_is_generated_from_the_settings_declarations():
    # every key is declared once, in its stage; `paramill config schema --write` regenerates
    from paramill import schema

    committed = (REPO / "configs" / "config.schema.yaml").read_text()
    assert committed == schema.dump(schema.generate()), \
        "configs/config.schema.yaml is stale: run `paramill config schema --write`"


def test_resolved_sections_build_their_settings_classes():
    # the schema's defaults are the classes' own: a resolved empty config builds each class
    resolved = config.resolve({})
    built = {
        ("bitext", "clean"): CleanSettings, ("bitext", "ingest"): IngestSettings,
        ("nmt", "spm"): SubwordSettings, ("nmt", "model"): ModelSettings,
        ("nmt", "train"): NmtTrainSettings, ("nmt", "translate"): TranslateSettings,
        ("embed", "model"): ModelSpec, ("embed", "train"): EmbedTrainSettings,
        ("filters", "heldout"): HeldoutSettings, ("filters", "kenlm"): KenlmSettings,
        ("filters", "classifier"): ClassifierSettings, ("filters", "select"): SelectSettings,
        ("filters", "analysis"): AnalysisSettings,
    }
    for (stage, key), cls in built.items():
        made = cls.from_dict(resolved[stage][key])
        assert asdict(made) == asdict(cls()), (stage, key)
    for name in ("overlap", "bleu"):
        cls = filter_class(name)
        assert cls.from_section(resolved["filters"][name]) == cls()
    assert filter_class("overlap").from_section({"orders": [2], "model": "x"}).orders == (2,)


def test_named_variants_override_only_what_they_give():
    resolved = config.resolve({"filters": {"select": {"max_tokens": 20},
                                           "releases": {"strict": {"size": 5}}},
                               "embed": {"model": {"dim": 50}, "models": {"w": {"components": ["word"]}}}})
    assert resolved["filters"]["releases"] == {"strict": {"size": 5}}
    assert resolved["embed"]["models"]["w"] == {"components": ["word"]}
    with pytest.raises(config.ConfigError, match="filters.releases"):
        config.resolve({"filters": {"releases": {"default": {}}}})


def _typed(node):
    return ("type" in node or "enum" in node or "$ref" in node
            or ("anyOf" in node and all("type" in alt for alt in node["anyOf"])))


def test_every_schema_property_is_described_and_typed():
    def walk(node, path):
        for name, sub in node.get("properties", {}).items():
            where = ".".join([*path, name])
            assert sub.get("description"), f"{where} has no description"
            assert _typed(sub), f"{where} has no type"
            walk(sub, [*path, name])
            extra = sub.get("additionalProperties")
            if isinstance(extra, dict):
                walk(extra, [*path, name, "*"])
            if isinstance(sub.get("items"), dict):
                walk(sub["items"], [*path, name, "[]"])
    walk(config.schema(), [])


def test_empty_config_gets_every_default():
    resolved = config.resolve({})
    assert resolved["work_dir"] == "work"
    assert resolved["bitext"]["clean"]["max_tokens"] == 100
    assert resolved["bitext"]["corpora"] == {}


def test_defaults_fill_inside_corpus_entries_but_a_layouts_own_keys_stay_its_own():
    """The stage's keys get their defaults in the resolved config; a layout's own keys do not
    (another layout of the same corpus kind would be given a key it does not take): its
    ``Spec`` fills them in."""
    from paramill.pairs.readers import PairCorpusSpec

    resolved = config.resolve({"pairs": {"corpora": {"a": {"format": "twitter-url", "path": "x"}}}})
    assert resolved["pairs"]["corpora"]["a"] == {"format": "twitter-url", "path": "x",
                                                 "dedup": True}
    spec = PairCorpusSpec.from_dict("a", resolved["pairs"]["corpora"]["a"])
    assert (spec.layout.positive_votes, spec.layout.negative_votes, spec.layout.keep) == (
        4, 2, "positive")


@pytest.mark.parametrize("cfg,message", [
    ({"bitext": {"clean": {"min_tokenz": 3}}},
     "config key bitext.clean: Additional properties are not allowed ('min_tokenz'"),
    ({"bitext": {"clean": {"max_tokens": "many"}}},
     "config key bitext.clean.max_tokens: 'many' is not of type 'integer'"),
    ({"bitext": {"corpora": {"a": {"format": "moses", "path": "x"}}}},
     "config key bitext.corpora.a: 'cs' is a required property"),
    ({"bitext": {"corpora": {"a": {"format": "docx", "path": "x"}}}},
     "config key bitext.corpora.a.format: 'docx' is not one of"),
    ({"bitext": {"corpora": {"bad name": {"format": "tsv", "path": "x"}}}},
     "config key bitext.corpora: 'bad name' does not match"),
    ({"bogus": 1}, "config key (top level): Additional properties are not allowed ('bogus'"),
    ({"nmt": {"models": {"cs-en": {"source_spm": "a", "target_spm": "b"}}}},
     "config key nmt.models.cs-en"),
    ({"nmt": {"translate": {"method": "sampling"}}}, "config key nmt.translate.method"),
    ({"embed": {"model": {"components": ["word", "word"]}}},
     "config key embed.model.components: ['word', 'word'] has non-unique elements"),
])
def test_bad_config_errors_name_the_key(cfg, message):
    with pytest.raises(config.ConfigError) as err:
        config.resolve(cfg)
    assert message in str(err.value)


@pytest.mark.parametrize("path", ["config.yaml", *sorted(p.relative_to(REPO).as_posix()
                                   for p in (REPO / "configs").glob("*.yaml")
                                   if p.name != "config.schema.yaml")])
def test_shipped_configs_are_valid(path):
    resolved = config.load(REPO / path)
    if path == "configs/twitter.yaml":  # an overlay on config.yaml (scripts/harvest.sh)
        assert resolved["twitter"]["source"] == "live" and resolved["twitter"]["enabled"]
        return
    if path == "configs/trial.yaml":  # given before a config of one's own corpora
        assert resolved["nmt"]["train"]["train_steps"] <= 1000
        return
    assert resolved["bitext"]["corpora"], "a shipped config names at least one corpus"


def test_digest_depends_on_values_not_key_order():
    a = config.digest({"x": 1, "y": {"a": 1, "b": 2}})
    assert a == config.digest({"y": {"b": 2, "a": 1}, "x": 1})
    assert a != config.digest({"x": 2, "y": {"a": 1, "b": 2}})


@pytest.mark.parametrize("given,message", [
    ({"bitext": {"ingest": {"shard_size": 100.0}}}, "bitext.ingest.shard_size: 100.0 is not of type 'integer'"),
    ({"bitext": {"ingest": {"shard_size": True}}}, "bitext.ingest.shard_size: True is not of type 'integer'"),
    ({"bitext": {"clean": {"max_length_ratio": float("nan")}}}, "max_length_ratio: nan is not of type 'number'"),
    ({"bitext": {"clean": {"max_length_ratio": float("inf")}}}, "max_length_ratio: inf is not of type 'number'"),
    ({"bitext": {"clean": {"min_tokens": 50, "max_tokens": 10}}},
     "config keys bitext.clean.min_tokens (50) and bitext.clean.max_tokens (10): min_tokens must not exceed max_tokens"),
    ({"filters": {"releases": {"v": {"bounds": {"bleu": [0.8, 0.2]}}}}},
     "filters.releases.v.bounds.bleu: lower bound 0.8 exceeds upper bound 0.2"),
    ({"twitter": {"harvest": {"accounts": ["x$(touch /tmp/p)"]}}}, "twitter.harvest.accounts.0: 'x$(touch"),
    ({"nmt": {"train_corpora": ["a;b"]}}, "nmt.train_corpora.0: 'a;b' does not match"),
    ({"resources": {"clean": {"slurm_partition": "gpu`id`"}}}, "resources.clean.slurm_partition: 'gpu`id`' does not match"),
    ({"resources": {"harvest": {"local": "sometimes"}}}, "resources.harvest.local: 'sometimes' is not of type 'boolean'"),
    ({"twitter": {"advanced": {"harvest": {"bearer_token_env": "X;rm"}}}},
     "twitter.advanced.harvest.bearer_token_env: 'X;rm' does not match"),
])
def test_values_the_schema_used_to_let_through_are_refused_naming_the_keys(given, message):
    with pytest.raises(ConfigError) as info:
        config.resolve(given)
    assert message in str(info.value)


def test_snakemake_config_strings_read_as_the_types_the_schema_wants():
    # snakemake --config 'bitext={"clean": {"max_tokens": 50}}' hands over {"max_tokens": "50"}
    resolved = config.resolve({"bitext": {"clean": {"max_tokens": "50"}, "advanced": {"clean": {"dedup": "false"}}},
                               "filters": {"select": {"bounds": {"overlap_1": ["0.1", "null"]}}}})
    assert resolved["bitext"]["clean"]["max_tokens"] == 50 and resolved["bitext"]["clean"]["dedup"] is False
    assert resolved["filters"]["select"]["bounds"]["overlap_1"] == [0.1, None]
    with pytest.raises(ConfigError, match="'fifty' is not of type 'integer'"):
        config.resolve({"bitext": {"clean": {"max_tokens": "fifty"}}})


def test_the_configuration_reference_lists_every_key_with_its_default():
    """docs/configuration.md is generated from the schema at build time: every section is a
    table, every key a row with its type and default, launch-only keys marked."""
    from paramill import schema

    page = schema.reference_page()
    sections = [line for line in page.splitlines() if line.startswith("## ")]
    assert "## `bitext.clean`" in sections and "## `bitext.corpora.NAME`" in sections
    assert "## `resources.RULE`" in sections and "## `evaluate.sts[]`" in sections
    assert "| `max_tokens` | integer | `100` |" in page
    assert "| `cuda_graph` | boolean | `true` | **launch-only.** " in page
    assert "| `method` | one of `beam`, `kbest`, `sample` | `\"beam\"` |" in page
    # every key of every section appears, under its own section
    nmt = config.user_schema()["properties"]["nmt"]["properties"]
    for section, node in (("nmt.train", nmt["train"]), ("nmt.advanced.train", nmt["advanced"]["properties"]["train"])):
        block = page.split(f"## `{section}`", 1)[1].split("\n## ", 1)[0]
        assert all(f"| `{key}` |" in block for key in node["properties"]), sorted(node["properties"])
    assert "bucket_size" in nmt["advanced"]["properties"]["train"]["properties"]


def test_keys_that_only_choose_inputs_are_marked_for_the_rules():
    # the lexicon rule leaves these out of its params: a new SimLex file re-scores SimLex only
    lexicon = config.schema()["properties"]["lexicon"]["properties"]
    marked = {k for k, v in lexicon.items() if v.get("x-workflow")}
    assert marked == {"release", "simlex"}
    from paramill.lexicon.pmi import LexiconSettings

    assert LexiconSettings.from_dict({"simlex": "x.txt", "release": "top-half"}).simlex == "x.txt"


def test_keys_that_only_change_how_a_job_runs_are_marked_for_the_rules():
    # the training rules pass these outside their params: flipping one re-runs nothing
    assert config.marked("launch", "embed", "train") == ("cuda_graph", "recurrent_cuda_graph",
                                                         "checkpoint_minutes")
    assert config.marked("workflow", "lexicon") == ("release", "simlex")
    assert config.marked("launch", "lexicon") == ("chunk_pairs", "partitions", "spill_rows")
    assert config.marked("launch", "bitext", "ingest") == ("batch_rows",)
    assert config.marked("launch", "nmt", "translate") == ()
    described = config.schema()["properties"]["lexicon"]["properties"]["partitions"]["description"]
    assert described.endswith("Launch-only: changing it re-runs nothing.")


def test_a_key_added_at_its_default_leaves_the_rules_params_as_they_were():
    """nmt.translate.batch_type came after shards were translated: in nmt_translate's params
    at its default ("examples", the decoding of before), the update re-translated every shard
    (25 GPU-hours for CzEng); at its default it is left out, any other value re-runs."""
    translate = config.resolve({})["nmt"]["translate"]
    assert translate["batch_type"] == "examples"
    assert config.marked("quiet-default", "nmt", "translate") == ("batch_type",)
    before = {k: v for k, v in translate.items() if k != "batch_type"}
    assert config.rule_params(translate, "nmt", "translate") == before
    tokens = config.resolve({"nmt": {"advanced": {"translate": {"batch_type": "tokens", "batch_size": 4096}}}})
    assert config.rule_params(tokens["nmt"]["translate"], "nmt", "translate") == {
        **before, "batch_type": "tokens", "batch_size": 4096}
    # workflow and launch-only keys stay out, whatever their values
    lexicon = config.resolve({"lexicon": {"advanced": {"chunk_pairs": 7}, "simlex": "s.txt"}})["lexicon"]
    assert not {"chunk_pairs", "simlex", "release", "partitions"} & set(config.rule_params(lexicon, "lexicon"))
    assert config.schema()["properties"]["nmt"]["properties"]["translate"]["properties"]["batch_type"][
        "x-quiet-default"] is True


def test_pair_and_bitext_corpora_share_one_namespace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("hyp.a.en", "hyp.b.en"):
        (tmp_path / name).write_text("x\n")
    with pytest.raises(config.ConfigError, match="bitext.corpora.x and pairs.corpora.x"):
        config.resolve({"bitext": {"corpora": {"x": {"format": "tsv", "path": "a.tsv"}}},
                        "pairs": {"corpora": {"x": {"format": "paranmt", "path": "b.txt"}}}})
    resolved = config.resolve({"pairs": {"corpora": {"p": {
        "format": "references", "reference": "r.en", "hypotheses": ["hyp.*.en"]}}}})
    assert resolved["pairs"]["corpora"]["p"]["dedup"] is True
    with pytest.raises(config.ConfigError, match="pairs.corpora.p"):
        config.resolve({"pairs": {"corpora": {"p": {"format": "references", "path": "x"}}}})


def test_corpus_names_in_other_sections_must_be_configured_corpora():
    """A name left over from another config (nmt.train_corpora, filters.heldout.corpora) is a
    config error naming the key and the corpora there are, not a failure inside the DAG."""
    bitext = {"corpora": {"news": {"format": "tsv", "path": "a.tsv"}}}
    pairs = {"corpora": {"mt": {"format": "paranmt", "path": "b.txt"}}}
    with pytest.raises(config.ConfigError, match=r"nmt.train_corpora: 'grammar' is not in "
                                                 r"bitext.corpora \(known: news\)"):
        config.resolve({"bitext": bitext, "pairs": pairs, "nmt": {"train_corpora": ["news", "grammar"]}})
    with pytest.raises(config.ConfigError, match="nmt.train_corpora: 'mt' is not in bitext.corpora"):
        config.resolve({"bitext": bitext, "pairs": pairs, "nmt": {"train_corpora": ["mt"]}})
    with pytest.raises(config.ConfigError, match=r"filters.heldout.corpora: 'a', 'b' are not in "
                                                 r"bitext.corpora or pairs.corpora \(known: mt, news\)"):
        config.resolve({"bitext": bitext, "pairs": pairs, "filters": {"heldout": {"corpora": ["a", "b"]}}})
    resolved = config.resolve({"bitext": bitext, "pairs": pairs, "nmt": {"train_corpora": ["news"]},
                               "filters": {"heldout": {"corpora": ["news", "mt"]}}})
    assert resolved["filters"]["heldout"]["corpora"] == ["news", "mt"]


@pytest.mark.parametrize("given,message", [
    ({"pairs": {"clean": {"min_tokens": 50, "max_tokens": 10}}},
     "config keys pairs.clean.min_tokens (50) and pairs.clean.max_tokens (10): min_tokens must not exceed"),
    ({"bitext": {"clean": {"min_tokens": 9, "max_tokens": 3}}}, "bitext.clean.min_tokens (9)"),
    ({"work_dir": ""}, "config key work_dir: '' is refused: must name a directory"),
    ({"results": "/"}, "config key results: '/' is refused"),
    ({"log_dir": "  "}, "config key log_dir"),
    ({"resources": {"nmt_trian": {"gpu": 1}}},
     "config key resources.nmt_trian: no rule is named 'nmt_trian' (did you mean 'nmt_train'?)"),
    ({"resources": {"score_kenlmm": {"mem_mb": 10}}}, "did you mean 'score_kenlm'?"),
    ({"resources": {"paraid_train": {"gpu": 1}}}, "did you mean 'twitter_identify'?"),  # renamed
    ({"nmt": {"translate": {"n_best": 20, "beam_size": 12}}},
     "nmt.translate.n_best (20) and nmt.translate.beam_size (12)"),
    ({"twitter": {"dates": ["2026-02-30"]}},
     "config key twitter.dates.0: '2026-02-30' is not a valid date"),
    ({"lexicon": {"advanced": {"token_pattern": "[a-"}}},
     "config key lexicon.advanced.token_pattern: '[a-' is not a valid"),
    ({"lexicon": {"advanced": {"word_pattern": "(?P<x"}}}, "config key lexicon.advanced.word_pattern"),
    ({"lexicon": {"advanced": {"token_pattern": ["a"]}}},  # not a string: its type, not a crash
     "config key lexicon.advanced.token_pattern: ['a'] is not of type 'string'"),
    ({"pairs": {"corpora": {"t": {"format": "twitter-url", "path": "x", "negative_votes": 4,
                                   "positive_votes": 4}}}},
     "pairs.corpora.t.negative_votes (4) and pairs.corpora.t.positive_votes (4)"),
    ({"embed": {"release": "nope"}}, "config key embed.release: no release is named 'nope'"),
    ({"embed": {"train": {"batch_size": 50},
               "advanced": {"train": {"recurrent_cuda_graph": True, "recurrent_pass_rows": 100}}}},
     "set recurrent_pass_rows to at least 4 x batch_size (200)"),
    ({"nmt": {"advanced": {"spm": {"model_type": "bpe"}}}},
     "config keys nmt.advanced.spm.model_type (bpe) and nmt.advanced.train.subword_nbest (-1), subword_alpha (0.1)"),
    ({"lexicon": {"release": "nope"}}, "config key lexicon.release: no release is named 'nope'"),
    ({"pairs": {"corpora": {"r": {"format": "references", "reference": "r.txt",
                                   "hypotheses": ["nothing-here-*.txt"]}}}},
     "config key pairs.corpora.r.hypotheses: no file matches 'nothing-here-*.txt'"),
    ({"container": "my image.sif"}, "config key container: 'my image.sif' is refused"),
    ({"resources": {"ingest": {"slurm_extra": "--nice=$(touch PWNED)0"}}},
     "config key resources.ingest.slurm_extra: '--nice=$(touch PWNED)0' is refused"),
    ({"resources": {"ingest": {"slurm_extra": "--comment=`id`"}}}, "resources.ingest.slurm_extra"),
    ({"resources": {"ingest": {"slurm_extra": "--qos=high; rm -rf x"}}}, "resources.ingest.slurm_extra"),
    ({"resources": {"ingest": {"slurm_extra": "--qos 'high'"}}}, "resources.ingest.slurm_extra"),
    ({"resources": {"ingest": {"slurm_extra": "--qos=high\n--x"}}}, "resources.ingest.slurm_extra"),
    ({"resources": {"ingest": {"slurm_extra": "--gres=gpu:1"}}}, "Not for GPUs"),
    ({"evaluate": {"sts": [{"name": "s", "year": 1, "format": "stsbenchmark", "path": "x",
                            "fields": {"score": "gold"}}]}},
     "config key evaluate.sts[0].fields: format stsbenchmark takes no fields"),
    ({"twitter": {"identify": {"train": [{"path": "q.csv", "format": "csv",
                                          "fields": {"s1": "q", "s2": "q"}}]}}},
     "config key twitter.identify.train[0].fields: q is named for more than one role"),
    ({"twitter": {"identify": {"evaluate": [{"path": "t.tsv", "format": "twitter-url", "labels": "t.label"}]}}},
     "config key twitter.identify.evaluate[0].labels: a separate label file is read for format pit2015 only"),
])
def test_cross_field_and_unsafe_values_are_refused_before_any_job_naming_the_key(given, message):
    with pytest.raises(config.ConfigError) as info:
        config.resolve(given)
    assert message in str(info.value)


def test_the_identifiers_settings_are_checked_when_the_config_loads(tmp_path, monkeypatch):
    """What stopped the identifier's job once it ran (a cross-encoder without fine-tuning, a
    sentence encoder not there, no labelled data, a file for the toks layout's folder) and
    what a model silently ignored (distill_text, encoder_layers under model cross) are
    refused when the config loads, each naming its key."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.toks").write_text("x\n")
    (tmp_path / "pairs").mkdir()
    identify = {"train": [{"path": "a.toks", "format": "toks"}]}
    cases = [
        ({"identify": {"model": "cross"}, "advanced": {"identify": {"finetune_epochs": 0}}},
         "config keys twitter.identify.model (cross) and twitter.advanced.identify.finetune_epochs (0)"),
        ({"identify": {"model": "cross"}, "advanced": {"identify": {"encoder_layers": 2, "distill_text": ["t.txt"]}}},
         "config key twitter.advanced.identify.encoder_layers: not read with model 'cross' (only with model encoder)"),
        ({"identify": {"model": "cross"}, "advanced": {"identify": {"distill_text": ["t.txt"]}}},
         "config key twitter.advanced.identify.distill_text: not read with model 'cross', encoder_layers 0 "
         "(only with model encoder and encoder_layers at least 1)"),
        ({"identify": {"model": "lr"}, "advanced": {"identify": {"token_alignment": False}}},
         "config key twitter.advanced.identify.token_alignment: not read with model 'lr'"),
        ({"identify": {"model": "encoder", "sentence_encoder": "no_such_encoder_package"}},
         "config key twitter.identify.sentence_encoder: 'no_such_encoder_package' is neither a folder nor an installed package"),
        ({"enabled": True, "identify": {"train": []}}, "config key twitter.identify.train: no labelled data"),
        ({"identify": identify}, "config key twitter.identify.train[0].path: 'a.toks' is a file; layout toks reads a folder"),
        ({"identify": {"evaluate": [{"path": "pairs", "format": "twitter-url"}]}},
         "config key twitter.identify.evaluate[0].path: 'pairs' is a folder; layout twitter-url reads a file"),
    ]
    for twitter, said in cases:
        with pytest.raises(ConfigError) as caught:
            config.resolve({"twitter": twitter})
        assert said in str(caught.value), str(caught.value)
    # what the models read is accepted: a student's settings with a student, the default encoder
    student = {"model": "encoder"}, {"encoder_layers": 2, "distill_text": ["t.txt"], "distill_epochs": 2}
    assert config.resolve({"twitter": {"identify": student[0], "advanced": {"identify": student[1]}}})
    assert config.resolve({"twitter": {"identify": {"model": "cross"}}})["twitter"]["identify"]["finetune_epochs"] is None


@pytest.mark.parametrize("extra", ["--qos=high", "--account myproj -C a100", "--exclusive",
                                   "--constraint=a100", "--mail-type=END,FAIL",
                                   "--nice=10 --comment=run-7"])
def test_sbatch_options_of_a_safe_form_are_accepted(extra):
    assert config.resolve({"resources": {"ingest": {"slurm_extra": extra}}})[
        "resources"]["ingest"]["slurm_extra"] == extra


def test_the_schema_lists_exactly_the_workflow_rules():
    """resources.RULE is checked against the schema's list: it must be the workflow's."""
    import re

    from paramill.schema import RULES

    names = set()
    for path in (REPO / "rules").glob("*.smk"):
        names |= set(re.findall(r"^(?:rule|checkpoint) (\w+):", path.read_text(), re.M))
    names |= set(re.findall(r"^rule (\w+):", (REPO / "Snakefile").read_text(), re.M))
    assert set(RULES) == names
    assert config.schema()["properties"]["resources"]["x-rules"] == list(RULES)
    # a score rule per filter (rules/filters.smk makes them in a loop) is known too
    assert config.resolve({"resources": {"score_dual_xent": {"gpu": 1}}})


def _bomb(levels: int) -> str:
    """A YAML alias bomb: 9**levels strings from a few hundred bytes (under a known key)."""
    nodes = ['&a0 ["x","x","x","x","x","x","x","x","x"]']
    nodes += [f"&a{k} [" + ",".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, levels)]
    return "twitter:\n  dates: [" + ", ".join(nodes) + "]\n"


def test_a_yaml_file_that_cannot_be_read_is_one_error_naming_it(tmp_path):
    """Bad YAML (the line), bytes that are not UTF-8, a value that contains itself and an
    alias bomb (4.8 million values from 300 bytes: 15 GB and 100 s of validating and
    printing before) are each a ConfigError naming the file, raised before validation."""
    cases = {"syntax.yaml": ("twitter:\n  dates: [\n", r"syntax.yaml:3: not valid YAML"),
             "bytes.yaml": (b"a: \xff\n", r"bytes.yaml: not UTF-8 \(byte 3\)"),
             "itself.yaml": ("twitter:\n  dates: &a [*a]\n", r"itself.yaml: a value contains itself"),
             "bomb.yaml": (_bomb(7), r"bomb.yaml: more than 1,000,000 values once its YAML aliases")}
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        with pytest.raises(ConfigError, match=message):
            config.load(path)
    with pytest.raises(ConfigError, match="the config: more than 5 values"):
        check_expanded({"a": [1, 2], "b": [3, 4]}, "the config", limit=5)
    shared = [1, 2]
    check_expanded({"a": shared, "b": shared}, "the config", limit=7)  # 1 + 2 + 2 * 2


def test_a_key_given_twice_is_an_error_naming_both_lines_not_the_last_silently(tmp_path, capsys):
    """YAML and JSON keep the second of two equal keys without a word: a second `embed:`
    section at the end of a config dropped every setting of the first. A config file, a
    `--settings @file` and inline `--settings` JSON each name the key (and the lines); keys
    merged in with `<<` may still be overridden, and 1 and "1" are two keys."""
    from paramill.cli import main

    doubled = tmp_path / "doubled.yaml"
    doubled.write_text("embed:\n  model:\n    dim: 300\nlexicon:\n  min_count: 2\n"
                       "embed:\n  train:\n    epochs: 3\n")
    with pytest.raises(ConfigError, match=r"doubled.yaml:6: not valid YAML: the key 'embed' is given "
                                          r"twice in one mapping \(lines 1 and 6\)"):
        config.load(doubled)
    nested = tmp_path / "nested.yaml"
    nested.write_text("embed:\n  train:\n    epochs: 3\n    seed: 1\n    epochs: 4\n")
    with pytest.raises(ConfigError, match=r"nested.yaml:5: .*'epochs' is given twice in one mapping \(lines 3 and 5\)"):
        config.read_yaml(nested)
    merged = tmp_path / "merged.yaml"
    merged.write_text("a: &x {b: 1, c: 2}\nd:\n  <<: *x\n  b: 3\n1: one\n'1': text\n")
    assert config.read_yaml(merged) == {"a": {"b": 1, "c": 2}, "d": {"b": 3, "c": 2}, 1: "one", "1": "text"}
    for given in (f"@{nested}", '{"epochs": 1, "seed": 2, "epochs": 2}'):
        with pytest.raises(SystemExit) as caught:
            main(["embed", "train", str(tmp_path / "p.tsv"), "--out", str(tmp_path / "m.pt"),
                  "--settings", given])
        assert caught.value.code == 2
        assert "argument --settings:" in (err := capsys.readouterr().err) and "'epochs' is given twice" in err
    for preset in [REPO / "config.yaml", *sorted((REPO / "configs").glob("*.yaml"))]:
        config.read_yaml(preset)  # the project's own configs name no key twice


def test_a_number_in_exponent_notation_is_a_number(tmp_path):
    """`learning_rate: 1e-3` is how a learning rate is written; PyYAML (YAML 1.1) reads it as
    the text '1e-3', and the config was refused ("'1e-3' is not of type 'number'"). paramill's
    reader reads it as YAML 1.2 does, and a config Snakemake read (the text) is read the same
    where the schema wants a number; where it wants an integer, `1e2` stays an error."""
    path = tmp_path / "lr.yaml"
    path.write_text("embed:\n  train:\n    learning_rate: 1e-3\nfilters:\n  advanced:\n"
                    "    classifier:\n      learning_rate: 5E-4\n")
    assert config.read_yaml(path)["embed"]["train"]["learning_rate"] == 0.001
    resolved = config.load(path)
    assert resolved["embed"]["train"]["learning_rate"] == 0.001
    assert resolved["filters"]["classifier"]["learning_rate"] == 0.0005
    as_snakemake_reads_it = {"embed": {"train": {"learning_rate": "1e-3"}}}
    assert config.resolve(as_snakemake_reads_it)["embed"]["train"]["learning_rate"] == 0.001
    with pytest.raises(ConfigError, match=r"embed.train.epochs: '1e2' is not of type 'integer'"):
        config.resolve({"embed": {"train": {"epochs": "1e2"}}})
    with pytest.raises(ConfigError, match=r"embed.train.learning_rate: '1e-3x' is not of type 'number'"):
        config.resolve({"embed": {"train": {"learning_rate": "1e-3x"}}})


def test_a_settings_object_without_a_required_key_names_the_keys():
    """A settings class whose fields have no default (an STS dataset's name, year, format,
    path) was built with a TypeError from its constructor, naming no setting."""
    from paramill.evaluate.settings import StsDataset

    with pytest.raises(ValueError, match=r"^datasets\[0\] settings: year, format, path must be given$"):
        StsDataset.from_dict({"name": "s"}, "datasets[0]")
    assert StsDataset.from_dict({"name": "s", "year": 2012, "format": "tsv", "path": "p"}).year == 2012


def test_a_settings_file_that_cannot_be_read_is_a_usage_error(tmp_path, capsys):
    from paramill.cli import main

    bomb = tmp_path / "s.yaml"
    bomb.write_text(_bomb(7))
    with pytest.raises(SystemExit) as caught:
        main(["bitext", "ingest", "--corpus", "c", "--spec", "{}", "--out", str(tmp_path / "o"),
              "--settings", f"@{bomb}"])
    assert caught.value.code == 2
    assert f"argument --settings: {bomb}: more than 1,000,000 values" in capsys.readouterr().err


def test_a_path_holding_a_brace_is_a_config_error_naming_the_key(tmp_path):
    """Snakemake reads braces in a rule's files as a wildcard: a corpus under `data {x}/`
    ended the workflow in a WildcardError naming neither key nor file. A value that names a
    file or folder that exists and holds a brace is a config error naming the key; a pattern
    with braces (`token_pattern`) names no file and is left alone."""
    folder = tmp_path / "data {x}"
    folder.mkdir()
    for side in ("cs", "en"):
        (folder / f"c.{side}").write_text("Ahoj.\n" if side == "cs" else "Hello.\n")
    given = {"bitext": {"corpora": {"c": {"format": "moses", "cs": str(folder / "c.cs"),
                                          "en": str(folder / "c.en")}}},
             "evaluate": {"sts": [{"name": "s", "year": 2012, "path": str(folder), "format": "tsv"}]}}
    with pytest.raises(ConfigError) as err:
        config.resolve(given)
    problems = str(err.value).splitlines()[1:]
    assert [p.split(":")[0].strip() for p in problems] == [
        "config key bitext.corpora.c.cs", "config key bitext.corpora.c.en", "config key evaluate.sts.0.path"]
    assert all("holds a brace, which Snakemake reads as a wildcard" in p for p in problems)
    plain = tmp_path / "data"
    folder.rename(plain)
    given["bitext"]["corpora"]["c"] = {"format": "moses", "cs": str(plain / "c.cs"), "en": str(plain / "c.en")}
    given["evaluate"]["sts"][0]["path"] = str(plain)
    given["lexicon"] = {"advanced": {"token_pattern": r"\w{1,}|[^\w\s]"}}
    assert config.resolve(given)["bitext"]["corpora"]["c"]["cs"] == str(plain / "c.cs")


def test_a_brace_in_a_folder_the_workflow_writes_is_a_config_error_before_it_exists(tmp_path):
    """The folders and files the workflow writes (work_dir, results, log_dir, the harvest's
    raw folder and state, the STS download folder) were checked only where they existed: a
    new `work_dir: runs/{date}` ended in Snakemake's RuleException ("Not all output, log and
    benchmark files of rule ingest contain the same wildcards") or a WildcardError about
    params, naming no key."""
    given = {"work_dir": str(tmp_path / "w{x}"), "results": str(tmp_path / "r}"),
             "log_dir": str(tmp_path / "{l}"),
             "twitter": {"raw_dir": str(tmp_path / "raw{"), "state": str(tmp_path / "s{x}.json")},
             "evaluate": {"download_dir": str(tmp_path / "d{x}")}}
    with pytest.raises(ConfigError) as err:
        config.resolve(given)
    problems = str(err.value).splitlines()[1:]
    assert sorted(p.split(":")[0].strip() for p in problems) == [
        "config key evaluate.download_dir", "config key log_dir", "config key results",
        "config key twitter.raw_dir", "config key twitter.state", "config key work_dir"]
    assert not any(tmp_path.iterdir())  # nothing was made to check them
    assert {".".join(k) for k in checks.WRITTEN_PATHS} == {p[11:] for p in
                                                           (p.split(":")[0].strip() for p in problems)}
    assert config.resolve({"work_dir": str(tmp_path / "w")})["work_dir"] == str(tmp_path / "w")


def test_the_settings_a_user_sets_stand_apart_from_the_ones_only_tuning_needs():
    """At most 150 settings outside the stages' `advanced:` sections (a corpus's, a model's,
    a release's or a rule's entry counted once); an advanced key set where it is declared is
    refused with its place in a config file, and the stages read it where they did."""
    from paramill.config import layout

    def keys(node, path=""):
        for key, sub in node.get("properties", {}).items():
            if key == layout.KEY:
                continue
            where = f"{path}.{key}" if path else key
            if sub.get("type") == "object" and "properties" in sub:
                yield from keys(sub, where)
            else:
                yield where

    user = list(keys(config.user_schema()))
    assert len(user) <= 150 and "nmt.train.train_steps" in user and "nmt.train.bucket_size" not in user
    with pytest.raises(ConfigError, match=r"config key nmt.train.bucket_size: set it as "
                                          r"nmt.advanced.train.bucket_size"):
        config.resolve({"nmt": {"train": {"bucket_size": 256}}})
    resolved = config.resolve({"nmt": {"advanced": {"train": {"bucket_size": 256}},
                                       "train": {"train_steps": 10}}})
    assert resolved["nmt"]["train"]["bucket_size"] == 256 and "advanced" not in resolved["nmt"]
    assert resolved["nmt"]["train"]["train_steps"] == 10
    # errors name an advanced key as a config file holds it
    with pytest.raises(ConfigError, match=r"config key nmt.advanced.train.bucket_size: 'x'"):
        config.resolve({"nmt": {"advanced": {"train": {"bucket_size": "x"}}}})
    assert layout.unfold(resolved)["nmt"]["advanced"]["train"]["bucket_size"] == 256
    assert layout.fold(layout.unfold(resolved)) == resolved


def test_the_schemas_own_regex_defaults_compile_and_are_not_checked_again():
    """A ``polars-regex`` setting left at its default is not compiled at every config load
    (importing polars for it took 0.4 s of every Snakemake start): the defaults compile
    here, and resolving the shipped config imports no polars; a pattern set in a config is
    compiled (the bad patterns above)."""
    import subprocess
    import sys

    from paramill.config import _default_patterns
    from paramill.text import regex_problem

    defaults = _default_patterns()
    assert len(defaults) == 2 and all(regex_problem(p) is None for p in defaults)
    repo = Path(__file__).resolve().parents[2]
    code = ("import sys; from paramill import config; config.load(sys.argv[1]); "
            "print('polars' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(repo / "config.yaml")], cwd=repo,
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_the_input_files_that_are_not_there_are_named_with_their_keys(tmp_path, monkeypatch):
    """Asked as a run starts (rules/common.smk): Snakemake keeps a job's outputs when its
    inputs are gone, so a corpus moved to a file that is not there kept its old rows."""
    monkeypatch.chdir(tmp_path)
    for name in ("a.cs", "a.en", "refs.en", "hyp.x.en", "sts.csv"):
        (tmp_path / name).write_text(f"{name}\n")
    cfg = config.resolve({
        "bitext": {"corpora": {"a": {"format": "moses", "cs": "a.cs", "en": "a.en"},
                               "b": {"format": "moses", "cs": "gone.cs", "en": "a.en"}}},
        "pairs": {"corpora": {"mt": {"format": "references", "reference": "refs.en",
                                     "hypotheses": ["hyp.*.en"]},
                              "p": {"format": "paranmt", "path": "gone.txt"}}},
        "evaluate": {"download_dir": "dl", "sts": [
            {"name": "mine", "year": "dev", "format": "stsbenchmark", "path": "sts.csv"},
            {"name": "typo", "year": "dev", "format": "stsbenchmark", "path": "st.csv"},
            {"name": "later", "year": "dev", "format": "stsbenchmark", "path": "dl/stsbenchmark/sts-dev.csv"}]},
        "lexicon": {"simlex": "SimLex.txt"},
        "nmt": {"models": {"cs-en": {"ct2": "ct2", "source_spm": "a.cs", "target_spm": "t.model"}}},
        "filters": {"parascore": {"model": "ps.pt"}},
        "twitter": {"enabled": True, "source": "archive", "archive": ["t.jsonl.gz"], "dates": ["2026-10-05"],
                    "identify": {"train": [{"path": "sts.csv", "format": "twitter-url"}]}}})
    assert checks.missing_input_files(cfg) == [
        "config key bitext.corpora.b: gone.cs is not there",
        "config key pairs.corpora.p: gone.txt is not there",
        "config key evaluate.sts.1.path: st.csv is not there",  # the download's is a rule's
        "config key lexicon.simlex: SimLex.txt is not there",
        "config key nmt.models.cs-en.ct2: ct2 is not there",
        "config key nmt.models.cs-en.target_spm: t.model is not there",
        "config key filters.parascore.model: ps.pt is not there",
        "config key twitter.archive.0: t.jsonl.gz is not there"]
    (tmp_path / "ct2").mkdir()
    for name in ("gone.cs", "gone.txt", "st.csv", "SimLex.txt", "t.model", "ps.pt", "t.jsonl.gz"):
        (tmp_path / name).write_text("x\ty\n")
    assert checks.missing_input_files(cfg) == []
    assert checks.missing_input_files(config.resolve({})) == []
