"""The NMT stage on a tiny model trained here (seconds on CPU)."""

import dataclasses
import json
import os
import math
import pickle
import random
import re

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paramill.errors import InputError
from paramill.run import device
from paramill.bitext.ingest import IngestSettings, ingest
from paramill.bitext.readers import CorpusSpec
from paramill.nmt import convert as convert_mod
from paramill.nmt import position
from paramill.nmt.data import write_training_text
from paramill.nmt.tables import CANDIDATES
from paramill.nmt.launch import sample_segmentation
from paramill.nmt.subwords import Segmenter, SubwordSettings
from paramill.nmt.subwords import train as train_spm
from paramill.nmt.train import ModelSettings, NmtTrainSettings, checkpoints, opennmt_config
from paramill.nmt.train import train as train_nmt
from paramill.nmt.translate import TranslateSettings, load_translator, translate_pieces, translate_shard
from paramill.provenance import verify

from ..conftest import REPO, stopped_when

TINY_MODEL = ModelSettings(layers=1, hidden_size=32, heads=2, ff_size=64, dropout=0.0)


def tiny_train(steps):
    return NmtTrainSettings(train_steps=steps, batch_size=1024, learning_rate=0.005, decay_method="none",
                         save_checkpoint_steps=10, valid_steps=10, bucket_size=64, keep_checkpoint=5)


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    """A shard of 400 sample pairs."""
    root = tmp_path_factory.mktemp("nmt")
    spec = CorpusSpec.from_dict("s", {"format": "moses",
                                      "cs": str(REPO / "data/sample/bitext/grammar.cs.gz"),
                                      "en": str(REPO / "data/sample/bitext/grammar.en.gz")})
    ingest(spec, root / "ingest", IngestSettings(shard_size=400))
    return root / "ingest" / "shard-00000.parquet"


@pytest.fixture(scope="module")
def spm_models(shard, tmp_path_factory):
    root = tmp_path_factory.mktemp("spm")
    settings = SubwordSettings(vocab_size=300)
    sizes = {lang: train_spm([shard], lang, root / f"{lang}.model", settings) for lang in ("cs", "en")}
    assert all(50 < size <= 300 for size in sizes.values()), sizes
    return root / "cs.model", root / "en.model"


@pytest.fixture(scope="module")
def tiny(shard, spm_models, tmp_path_factory):
    """A tiny CS->EN model: 60 steps, converted to CTranslate2."""
    root = tmp_path_factory.mktemp("tiny")
    write_training_text([shard], root / "data", valid_size=20)
    summary = train_nmt("cs-en", root / "data", *spm_models, root / "model.pt", root / "work",
                        TINY_MODEL, tiny_train(60))
    convert_mod.convert(root / "model.pt", *spm_models, root / "ct2")
    return {"root": root, "summary": summary, "spm": spm_models}


@pytest.fixture(scope="module")
def back(shard, spm_models, tmp_path_factory):
    """A tiny EN->CS model, 60 steps on the same shard, converted: the second direction of
    dual scoring (a SentencePiece model must fit the side it is given for)."""
    root = tmp_path_factory.mktemp("back")
    write_training_text([shard], root / "data", valid_size=20)
    train_nmt("en-cs", root / "data", spm_models[1], spm_models[0], root / "model.pt",
              root / "work", TINY_MODEL, tiny_train(60))
    convert_mod.convert(root / "model.pt", spm_models[1], spm_models[0], root / "ct2")
    return root / "ct2"


def test_segmentation_round_trips(spm_models):
    cs = Segmenter(spm_models[0])
    texts = ["Starý pán čte noviny.", "Žena kupuje chléb v obchodě."]
    pieces = cs.encode(texts)
    assert all(len(p) > 1 for p in pieces)
    assert cs.decode(pieces) == texts
    assert cs.encode(texts) == pieces  # Viterbi is deterministic
    rng = random.Random(0)
    scores = [cs.sp.get_score(i) for i in range(cs.sp.get_piece_size())]
    samples = [tuple(sample_segmentation(cs.sp, texts[0], -1, 0.1, rng, scores)) for _ in range(50)]
    assert len(set(samples)) > 1  # regularisation gives other segmentations...
    assert {cs.decode([list(s)])[0] for s in samples} == {texts[0]}  # ...of the same text


def test_training_text_split_is_deterministic_and_complete(shard, tmp_path):
    a = write_training_text([shard], tmp_path / "a", valid_size=25, seed=1)
    b = write_training_text([shard], tmp_path / "b", valid_size=25, seed=1)
    assert a == b and a["train"] + a["valid"] == a["pairs"] == 400
    assert 10 <= a["valid"] <= 25
    for name in ("train.cs", "train.en", "valid.cs", "valid.en"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    assert len((tmp_path / "a" / "train.cs").read_text().splitlines()) == a["train"]


def test_opennmt_s_feature_separator_in_a_sentence_trains_as_a_box_drawing_bar(shard, spm_models, tmp_path):
    """U+FFE8 in a line is OpenNMT-py's feature separator: one sentence holding it stopped
    ``onmt_train`` with an AssertionError (after the vocabulary); the training text holds
    U+2502 in its place, counted, and the model trains."""
    table = pq.read_table(shard)
    cs = table.column("cs").to_pylist()
    cs[3] = "Pes\uffe8kočka běží domů."
    table = table.set_column(table.schema.get_field_index("cs"), "cs", pa.array(cs, pa.string()))
    pq.write_table(table, tmp_path / "shard.parquet")
    stats = write_training_text([tmp_path / "shard.parquet"], tmp_path / "data", valid_size=20)
    assert stats["separators"] == 1
    text = (tmp_path / "data" / "train.cs").read_text() + (tmp_path / "data" / "valid.cs").read_text()
    assert "Pes\u2502kočka běží domů." in text and "\uffe8" not in text
    summary = train_nmt("cs-en", tmp_path / "data", *spm_models, tmp_path / "model.pt", tmp_path / "work",
                        TINY_MODEL, tiny_train(5))
    assert summary["step"] == 5


def test_bpe_subwords_train_with_viterbi_segmentation(shard, tmp_path):
    """``nmt.spm.model_type: bpe`` has no n best segmentations to sample among: the config
    refuses it with subword regularisation (test_config), and with ``subword_nbest: 1`` the
    model trains (SentencePiece's NBestEncode error stopped build_vocab before)."""
    models = [tmp_path / f"{lang}.model" for lang in ("cs", "en")]
    for lang, model in zip(("cs", "en"), models):
        train_spm([shard], lang, model, SubwordSettings(vocab_size=300, model_type="bpe"))
    write_training_text([shard], tmp_path / "data", valid_size=20)
    summary = train_nmt("cs-en", tmp_path / "data", *models, tmp_path / "model.pt", tmp_path / "work",
                        TINY_MODEL, dataclasses.replace(tiny_train(5), subword_nbest=1))
    assert summary["step"] == 5


def test_opennmt_config_matches_the_known_facts(tmp_path):
    cfg = opennmt_config("en-cs", tmp_path, tmp_path / "en.model", tmp_path / "cs.model", tmp_path,
                         TINY_MODEL, tiny_train(5), gpus=0)
    assert cfg["self_attn_type"] == "scaled-dot"
    assert cfg["data"]["corpus_1"]["path_src"].endswith("train.en")
    assert cfg["src_subword_model"].endswith("en.model") and cfg["tgt_subword_nbest"] == 1
    assert "gpu_ranks" not in cfg
    assert opennmt_config("cs-en", tmp_path, tmp_path, tmp_path, tmp_path, TINY_MODEL,
                          tiny_train(5), gpus=2)["gpu_ranks"] == [0, 1]
    # mixed precision on a GPU only; CPU training stays fp32 whatever the setting
    half = dataclasses.replace(tiny_train(5), precision="fp16")
    assert "model_dtype" not in cfg and "model_dtype" not in opennmt_config(
        "cs-en", tmp_path, tmp_path, tmp_path, tmp_path, TINY_MODEL, half, gpus=0)
    assert opennmt_config("cs-en", tmp_path, tmp_path, tmp_path, tmp_path, TINY_MODEL, half,
                          gpus=1)["model_dtype"] == "fp16"


def test_training_resumes_from_the_last_checkpoint(tiny, capfd):
    root = tiny["root"]
    assert tiny["summary"]["step"] == 60 and tiny["summary"]["gpus"] == device.cuda_count()
    summary = train_nmt("cs-en", root / "data", *tiny["spm"], root / "model70.pt", root / "work",
                        TINY_MODEL, tiny_train(70))
    err = capfd.readouterr().err
    assert "resuming from step 60" in err
    assert summary["step"] == 70
    assert [s for s, _ in checkpoints(root / "work")][-1] == 70


def _positions(work):
    """step -> (passes, lines) of corpus_1 in each checkpoint's record."""
    return {step: (lambda at: (at["passes"], at["lines"]))(position.read_record(path)["corpus_1"])
            for step, path in checkpoints(work)}


def test_a_resumed_training_reads_its_corpus_from_where_the_checkpoint_was(tiny, tmp_path, capfd):
    """Each checkpoint records where the training corpus was when the bucket its step trained
    on began (380 lines, buckets of 64: every position a whole number of buckets into the
    corpus read round and round), and a run resumed from it reads on from there, where it
    read from the first line again (a time-limited training never got past the corpus's
    first part)."""
    root = tiny["root"]
    lines = len((root / "data" / "train.cs").read_text().splitlines())
    train_nmt("cs-en", root / "data", *tiny["spm"], tmp_path / "model.pt", tmp_path / "work",
              TINY_MODEL, dataclasses.replace(tiny_train(60), keep_checkpoint=3))
    before = _positions(tmp_path / "work")
    assert sorted(before) == [40, 50, 60]  # keep_checkpoint 3: the others' records went with them
    assert len(list((tmp_path / "work").glob("model_step_*"))) == 6
    assert all((p * lines + n) % 64 == 0 for p, n in before.values()), before
    assert before[60][0] >= 2  # steps of ~a bucket: the corpus read round more than twice
    capfd.readouterr()
    summary = train_nmt("cs-en", root / "data", *tiny["spm"], tmp_path / "model.pt", tmp_path / "work",
                        TINY_MODEL, dataclasses.replace(tiny_train(80), keep_checkpoint=3))
    passes, read = before[60]
    assert (f"training corpus corpus_1 read from line {read + 1:,} (pass {passes + 1}), where the "
            "checkpoint's run was") in capfd.readouterr().err
    after = _positions(tmp_path / "work")
    assert (after[70][0] * lines + after[70][1]) > passes * lines + read  # on from there, not from 0
    assert all((p * lines + n) % 64 == 0 for p, n in after.values())
    assert summary["corpus_position"] == {"corpus_1": {"passes": after[80][0], "lines": after[80][1]}}
    # a checkpoint without a record (an older paramill's, several GPUs'): from the first line
    (tmp_path / "work" / "model_step_80.pt.position.json").unlink()
    train_nmt("cs-en", root / "data", *tiny["spm"], tmp_path / "model90.pt", tmp_path / "work",
              TINY_MODEL, dataclasses.replace(tiny_train(90), keep_checkpoint=3))
    err = capfd.readouterr().err
    assert "model_step_80.pt has no record of where the training corpus was" in err
    assert "read from line" not in err
    assert position.read_record(tmp_path / "work" / "model_step_90.pt")["corpus_1"]["passes"] == 0


def test_a_corpus_record_that_does_not_read_is_said_and_read_as_none(tmp_path, capsys):
    ckpt = tmp_path / "model_step_5.pt"
    position.write_record(ckpt, 5, {"corpus_1": {"passes": 2, "lines": 17}})
    assert position.read_record(ckpt) == {"corpus_1": {"passes": 2, "lines": 17}}
    assert position.read_record(tmp_path / "model_step_6.pt") is None  # none: nothing said
    assert capsys.readouterr().err == ""
    for text, said in (("{", "position.json:1: is not JSON (Expecting property name"),
                       ("[]", "is not a record of where training was"),
                       ('{"corpora": {"corpus_1": {"passes": -1, "lines": 0}}}', "is not a record"),
                       ('{"corpora": {"corpus_1": {"passes": true, "lines": 0}}}', "is not a record"),
                       ('{"corpora": {"c": 3}}', "is not a record")):
        position.record_path(ckpt).write_text(text)
        assert position.read_record(ckpt) is None, text
        err = capsys.readouterr().err
        assert said in err and "model_step_5.pt.position.json" in err, err
        assert "reading the training corpus from its first line" in err
        with pytest.raises(InputError, match="remove it to train on from the training corpus's first line"):
            position.check_record(ckpt, 5, {"corpus_1": tmp_path / "train.cs"})


def test_a_position_record_that_does_not_fit_the_run_is_refused_naming_what(tmp_path):
    """A record that reads but does not fit (another step's, copied forward; a corpus the run
    does not have; a line past the corpus's end) was used as it was: refused, naming each."""
    corpus = tmp_path / "train.cs"
    corpus.write_text("a\n" * 40)
    ckpt = tmp_path / "model_step_60.pt"
    position.check_record(ckpt, 60, {"corpus_1": corpus})  # no record: read from the start
    position.write_record(ckpt, 60, {"corpus_1": {"passes": 1, "lines": 40}})
    position.check_record(ckpt, 60, {"corpus_1": corpus})  # fits: a pass ends at the last line
    position.write_record(ckpt, 40, {"corpus_1": {"passes": 0, "lines": 41}, "corpus_9": {"passes": 0, "lines": 1}})
    with pytest.raises(InputError) as caught:
        position.check_record(ckpt, 60, {"corpus_1": corpus})
    assert str(caught.value) == (
        f"{ckpt}.position.json: does not fit the run resuming from it: it is step 40's, the checkpoint "
        "model_step_60.pt step 60's; corpus corpus_1 is at line 41, past its end (40 lines in train.cs); "
        "it names corpus 'corpus_9', which this run does not train on (corpus_1); remove it to train on "
        "from the training corpus's first line")


@pytest.mark.filterwarnings("ignore:`torch.cuda.amp:FutureWarning")  # OpenNMT-py 3.5.1
def test_a_resumed_pass_skips_lines_undecoded_to_the_examples_opennmt_makes(tmp_path):
    import itertools

    from paramill.nmt.onmt_import import import_onmt

    import_onmt()
    from onmt.inputters.text_corpus import ParallelCorpus

    (tmp_path / "s").write_text("".join(f"zdroj {i} ž\n" for i in range(50)), encoding="utf-8")
    (tmp_path / "t").write_text("".join(f"target {i}\n" for i in range(50)), encoding="utf-8")
    corpus = ParallelCorpus("c", str(tmp_path / "s"), str(tmp_path / "t"))
    for skip in (1, 17, 49, 50, 60):
        assert list(position.skipped(corpus, skip)) == list(itertools.islice(corpus.load(), skip, None))
    assert next(position.skipped(corpus, 17))["src"] == "zdroj 17 ž"


@pytest.mark.filterwarnings("ignore:`torch.cuda.amp:FutureWarning")  # OpenNMT-py 3.5.1
def test_a_training_corpus_is_read_from_its_record_then_round_from_its_start(tmp_path, monkeypatch, capsys):
    """OpenNMT-py's own corpus iterator, patched: the first pass from the recorded line (each
    example's line number its line in the file), then whole passes counted on; the
    validation corpus is read as OpenNMT-py reads it, never tracked."""
    from paramill.nmt.onmt_import import import_onmt

    import_onmt()
    from onmt.inputters.dynamic_iterator import DynamicDatasetIter
    from onmt.inputters.text_corpus import ParallelCorpus, ParallelCorpusIterator
    from onmt.models.model_saver import ModelSaver
    from onmt.transforms import TransformPipe

    for cls, name in ((ParallelCorpusIterator, "__iter__"), (DynamicDatasetIter, "_bucketing"),
                      (ModelSaver, "save"), (ModelSaver, "_rm_checkpoint")):
        monkeypatch.setattr(cls, name, getattr(cls, name))  # put back after the test
    ckpt = tmp_path / "model_step_9.pt"
    position.write_record(ckpt, 9, {"corpus_1": {"passes": 3, "lines": 7}})
    positions = position.track(str(ckpt))
    (tmp_path / "s").write_text("".join(f"s{i}\n" for i in range(10)))
    (tmp_path / "t").write_text("".join(f"t{i}\n" for i in range(10)))

    def read(cid):
        corpus = ParallelCorpus(cid, str(tmp_path / "s"), str(tmp_path / "t"))
        return [(ex["src"], ex["cid_line_number"]) for ex, _, _ in
                ParallelCorpusIterator(corpus, TransformPipe.build_from([]))]

    assert read("corpus_1") == [([f"s{i}"], i) for i in range(7, 10)]
    assert "training corpus corpus_1 read from line 8 (pass 4)" in capsys.readouterr().err
    assert positions.now["corpus_1"] == {"passes": 3, "lines": 10}
    assert read("corpus_1") == [([f"s{i}"], i) for i in range(10)]
    assert positions.now["corpus_1"] == {"passes": 4, "lines": 10}
    assert len(read("valid")) == 10 and "valid" not in positions.now




def _stopped_by_sigterm(shard, spm_models, tmp_path, to: str) -> str:
    """``paramill nmt train`` as the rule runs it, sent SIGTERM mid-training with no checkpoint
    due (``save_checkpoint_steps`` past the end): OpenNMT-py saves the step it is at and the
    command ends with status 143; run again, it resumes from that step. ``parent``: the signal
    to paramill alone (``kill``), which passes it on; ``group``: to every process, as SLURM
    sends it at a time limit (OpenNMT-py gets it twice: once from each). Returns the resumed
    run's output."""
    import signal
    import subprocess
    import sys

    write_training_text([shard], tmp_path / "data", valid_size=20)
    model = json.dumps(dataclasses.asdict(TINY_MODEL))

    def command(steps: int) -> list[str]:
        settings = {**dataclasses.asdict(tiny_train(steps)), "save_checkpoint_steps": 10**6,
                    "valid_steps": 10**6}
        return [sys.executable, "-m", "paramill.cli", "--threads", "1", "nmt", "train", "--direction", "cs-en",
                "--data", str(tmp_path / "data"), "--src-spm", str(spm_models[0]), "--tgt-spm",
                str(spm_models[1]), "--work", str(tmp_path / "work"), "--out", str(tmp_path / "model.pt"),
                "--model-settings", model, "--settings", json.dumps(settings)]

    env = {**os.environ, "PARAMILL_PROGRESS": "0"}
    def stop(proc) -> None:
        if to == "group":
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGTERM)

    # training is under way at its first report (each 100 steps)
    status, rest = stopped_when(command(10**6), env, lambda line: "Step 100/" in line, stop,
                                start_new_session=True)
    assert status == 143, rest[-3000:]
    (step, saved), = checkpoints(tmp_path / "work")  # the only checkpoint: the one SIGTERM asked for
    assert step >= 100 and f"nmt train: stopped (SIGTERM) after the checkpoint of step {step}" in rest
    assert not (tmp_path / "model.pt").exists()
    at = position.read_record(saved)["corpus_1"]  # where the corpus was: read on from there
    done = subprocess.run(command(step + 5), env=env, capture_output=True, text=True, check=True)
    assert f"nmt train cs-en: resuming from step {step}" in done.stderr
    assert (f"training corpus corpus_1 read from line {at['lines'] + 1:,} (pass {at['passes'] + 1})"
            in done.stderr)
    assert [s for s, _ in checkpoints(tmp_path / "work")][-1] == step + 5
    assert (tmp_path / "model.pt").exists()
    return done.stdout + done.stderr


def test_sigterm_saves_a_step_only_where_training_runs_in_the_launchers_process(tmp_path):
    """For several GPUs OpenNMT-py trains in processes it spawns, which the launcher's patch
    does not reach: there it keeps SIGTERM's default, so it cannot outlive them as if
    training had ended."""
    from paramill.nmt.launch import trains_here

    for name, cfg in (("cpu", {}), ("one", {"gpu_ranks": [0]}), ("two", {"gpu_ranks": [0, 1]})):
        (tmp_path / f"{name}.yaml").write_text(json.dumps(cfg))
    assert [trains_here(["-config", str(tmp_path / f"{n}.yaml")]) for n in ("cpu", "one", "two")] == [
        True, True, False]
    assert trains_here([]) and trains_here(["-config"])  # no config: OpenNMT-py's default, one process


@pytest.mark.slow
@pytest.mark.parametrize("to", ["parent", "group"])
def test_a_training_stopped_by_sigterm_saves_its_step_and_resumes_there(shard, spm_models, tmp_path, to):
    _stopped_by_sigterm(shard, spm_models, tmp_path, to)


@pytest.mark.gpu
def test_gpu_a_training_stopped_by_sigterm_saves_its_step_on_cuda(shard, spm_models, tmp_path):
    """As the CPU test, SLURM's way (every process signalled), with OpenNMT-py on the GPU."""
    out = _stopped_by_sigterm(shard, spm_models, tmp_path, "group")
    assert re.search(r"'gpus': [1-9]", out), out[-2000:]


def test_resuming_sets_aside_a_cut_checkpoint_and_one_that_would_run_code(tiny, tmp_path, capfd,
                                                                        monkeypatch):
    """OpenNMT-py writes a checkpoint in place: a job killed while it writes leaves a cut one,
    on which every later run failed. Training also resumed with torch's full unpickler, so a
    checkpoint from elsewhere ran code. Now both are set aside (``.unreadable``) and training
    resumes from the newest checkpoint the weights-only unpickler reads, even where the job's
    environment asks torch for the full one; nothing ran."""
    import pathlib
    import shutil

    import torch

    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    root, work = tiny["root"], tmp_path / "work"
    shutil.copytree(root / "work", work, symlinks=True)
    (*_, (prev, _), (last, last_path)) = checkpoints(work)
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return pathlib.Path.touch, (pathlib.Path(marker),)

    torch.save({"model": {}, "opt": Payload()}, last_path)  # the newest: from elsewhere
    whole = (work / f"model_step_{prev}.pt").read_bytes()
    (work / f"model_step_{last + 5}.pt").write_bytes(whole[:len(whole) // 2])  # cut while written
    capfd.readouterr()
    summary = train_nmt("cs-en", root / "data", *tiny["spm"], tmp_path / "model.pt", work,
                        TINY_MODEL, tiny_train(last + 10))
    err = capfd.readouterr().err
    assert not marker.exists()
    assert f"model_step_{last + 5}.pt: not an OpenNMT-py checkpoint paramill reads" in err
    assert f"model_step_{last}.pt: not an OpenNMT-py checkpoint paramill reads" in err
    assert f"resuming from step {prev}" in err
    assert sorted(p.name for p in work.glob("*.unreadable")) == sorted(
        [f"model_step_{last}.pt.unreadable", f"model_step_{last + 5}.pt.unreadable"])
    assert summary["step"] == last + 10 and checkpoints(work)[-1][0] == last + 10
    assert verify(tmp_path / "model.pt", recursive=False) == []


def test_opennmt_reads_checkpoints_with_the_weights_only_unpickler(tiny, tmp_path):
    """What ``-train_from`` calls, after the launcher's set-up: OpenNMT-py's own checkpoint
    reads, one that names anything else is refused before it runs."""
    import pathlib

    import torch

    from paramill.nmt.launch import read_checkpoints_safely
    from paramill.nmt.onmt_import import import_onmt

    import_onmt()
    from onmt.models.model_saver import load_checkpoint as onmt_load

    read_checkpoints_safely()
    assert onmt_load(str(tiny["root"] / "model.pt"))["opt"].enc_layers == 1
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return pathlib.Path.touch, (pathlib.Path(marker),)

    torch.save({"model": {}, "opt": Payload()}, tmp_path / "bad.pt")
    with pytest.raises(pickle.UnpicklingError):
        onmt_load(str(tmp_path / "bad.pt"))
    assert not marker.exists()

def test_changed_settings_start_afresh(tiny, tmp_path, capfd):
    root = tiny["root"]
    work = tmp_path / "work"
    train_nmt("cs-en", root / "data", *tiny["spm"], tmp_path / "a.pt", work, TINY_MODEL, tiny_train(10))
    other = ModelSettings(layers=1, hidden_size=16, heads=2, ff_size=32, dropout=0.0)
    summary = train_nmt("cs-en", root / "data", *tiny["spm"], tmp_path / "b.pt", work, other,
                        tiny_train(10))
    assert "settings changed, starting afresh" in capfd.readouterr().err
    assert summary["step"] == 10 and verify(tmp_path / "b.pt", recursive=False) == []


def test_costs_are_per_token_nll_of_the_output(tiny):
    cs, en = (Segmenter(p) for p in tiny["spm"])
    translator = load_translator(tiny["root"] / "ct2", TranslateSettings(), threads=1)
    src = cs.encode(["Muž čte knihu.", "Naše babička vaří oběd doma."])
    for settings in (TranslateSettings(beam_size=4), TranslateSettings(beam_size=4, length_penalty=1.0),
                     TranslateSettings(beam_size=4, max_decoding_length=3)):
        for s, hyps in zip(src, translate_pieces(translator, src, settings)):
            (pieces, nll), = hyps
            scored = translator.score_batch([s], [pieces])[0]
            assert len(scored.log_probs) == len(pieces) + 1  # score_batch adds EOS
            ended = len(pieces) < settings.max_decoding_length
            expected = -sum(scored.log_probs[:len(pieces) + ended]) / (len(pieces) + ended)
            assert math.isclose(nll, expected, rel_tol=1e-3), (settings, pieces)


def test_kbest_keeps_the_whole_beam(tiny):
    cs = Segmenter(tiny["spm"][0])
    translator = load_translator(tiny["root"] / "ct2", TranslateSettings(), threads=1)
    (hyps,) = translate_pieces(translator, cs.encode(["Muž čte knihu."]),
                               TranslateSettings(method="kbest", beam_size=5))
    assert len(hyps) == 5
    totals = [nll * (len(p) + 1) for p, nll in hyps]
    assert totals == sorted(totals)  # best (highest log-probability) first
    with pytest.raises(ValueError, match="cannot exceed"):
        translate_pieces(translator, [["x"]], TranslateSettings(beam_size=2, n_best=3))


def test_translate_shard_writes_the_candidate_table(tiny, shard, tmp_path):
    out = tmp_path / "cand.parquet"
    stats = translate_shard(shard, tiny["root"] / "ct2", *tiny["spm"], out,
                            TranslateSettings(method="kbest", beam_size=3, batch_size=16))
    table = pq.read_table(out)
    assert table.schema.equals(CANDIDATES)
    frame = pl.from_arrow(table)
    assert stats["sources"] == 400 and stats["device"] == device.pick("auto")
    # the shard is raw ingest output: sources with an empty Czech side give no candidate
    translatable = pl.read_parquet(shard).filter(pl.col("cs").str.strip_chars() != "").height
    assert translatable < 400
    assert frame["pair_id"].n_unique() == translatable
    assert frame.group_by("pair_id").len()["len"].max() <= 3
    assert frame.filter(pl.col("rank") == 1).height == translatable
    assert frame["candidate_id"].n_unique() == frame.height
    assert frame["fwd_nll"].min() > 0 and frame["method"].unique().to_list() == ["kbest"]
    refs = pl.read_parquet(shard).select("pair_id", pl.col("en").alias("ref"))
    joined = frame.join(refs, on="pair_id")
    assert joined.height == frame.height and (joined["ref"] == joined["en_ref"]).all()
    record = json.loads((tmp_path / "cand.parquet.prov.json").read_text())
    assert record["translation"]["sources"] == 400


def test_a_failed_translation_leaves_no_output(tiny, tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(Exception):
        translate_shard(bad, tiny["root"] / "ct2", *tiny["spm"], tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()


def test_conversion_bundles_the_subword_models(tiny):
    found = convert_mod.bundle_spm(tiny["root"] / "ct2")
    assert found is not None and found[0].read_bytes() == tiny["spm"][0].read_bytes()
    with pytest.raises(ValueError, match="quantization"):
        convert_mod.convert(tiny["root"] / "model.pt", *tiny["spm"], tiny["root"] / "x", "int3")


def test_a_file_that_is_no_checkpoint_fails_conversion_and_leaves_nothing(spm_models, tmp_path):
    bad = tmp_path / "model.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"model\.pt: not an OpenNMT-py checkpoint paramill reads"):
        convert_mod.convert(bad, *spm_models, tmp_path / "ct2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]


def test_a_checkpoint_with_a_compressed_member_is_refused_before_torch_inflates_it(spm_models, tmp_path):
    """torch inflates a deflated member of its zip whatever the ratio (195 KB were a 200 MB
    tensor); torch.save and OpenNMT-py store every member as it is."""
    import zipfile

    import torch

    torch.save({"model": {"w": torch.zeros(1000)}}, tmp_path / "plain.pt")
    with zipfile.ZipFile(tmp_path / "plain.pt") as plain, \
            zipfile.ZipFile(tmp_path / "model.pt", "w", compression=zipfile.ZIP_DEFLATED) as packed:
        for info in plain.infolist():
            packed.writestr(info.filename, plain.read(info.filename))
    (tmp_path / "plain.pt").unlink()
    with pytest.raises(ValueError, match=r"model\.pt: not an OpenNMT-py checkpoint as torch.save writes it "
                                           r"\(its member \S+ is compressed\)"):
        convert_mod.convert(tmp_path / "model.pt", *spm_models, tmp_path / "ct2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]


def test_a_checkpoint_that_would_run_code_is_refused_before_anything_unpickles_it(spm_models, tmp_path):
    """A checkpoint is a pickle: one from elsewhere could call anything as it is read (as
    CTranslate2's converter and OpenNMT-py read them). Conversion and the opennmt-py engine
    read it with torch's weights-only unpickler first, and refuse it; nothing ran."""
    import pathlib

    import torch

    from paramill.nmt.checkpoints import CHECKPOINT
    from paramill.nmt.torch_engine import TorchTranslator

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return pathlib.Path.touch, (pathlib.Path(marker),)

    torch.save({"model": {}, "opt": Payload()}, tmp_path / "model.pt")
    with pytest.raises(ValueError, match=r"model\.pt: not an OpenNMT-py checkpoint paramill reads"):
        convert_mod.convert(tmp_path / "model.pt", *spm_models, tmp_path / "ct2")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    torch.save({"model": {}, "opt": Payload()}, bundle / CHECKPOINT)
    with pytest.raises(ValueError, match=r"onmt\.pt: not an OpenNMT-py checkpoint paramill reads"):
        TorchTranslator(bundle)
    assert not marker.exists() and not (tmp_path / "ct2").exists()


def test_a_checkpoint_whose_options_outsize_its_weights_is_refused_before_the_model_is_built(tiny, tmp_path):
    """OpenNMT-py builds the model at its options' sizes before comparing the weights: a
    1.4 MB checkpoint whose options say ``hidden_size`` 100,000 asked for 40 GB (on the
    meta device too: its layers allocate themselves). The options' least size is counted
    against the values the checkpoint holds first; the checkpoint as written loads."""
    import shutil

    import torch

    from paramill.nmt.checkpoints import CHECKPOINT
    from paramill.nmt.torch_engine import TorchTranslator

    bundle = tmp_path / "bundle"
    shutil.copytree(tiny["root"] / "ct2", bundle)
    assert TorchTranslator(bundle).src_vocab
    data = torch.load(bundle / CHECKPOINT, weights_only=False)
    data["opt"].hidden_size = 100_000
    torch.save(data, bundle / CHECKPOINT)
    with pytest.raises(ValueError, match=r"onmt\.pt: its options describe a model of at least "
                                         r"[\d,]{14,} parameters and it holds [\d,]+ values"):
        TorchTranslator(bundle)


def test_a_checkpoint_whose_options_do_not_build_its_model_is_an_error_naming_it(tiny, tmp_path):
    """Options OpenNMT-py or CTranslate2 cannot build from, or that crash CTranslate2 once
    converted: OpenNMT-py's ZeroDivisionError or AssertionError, the converter's KeyError
    (tracebacks before), a converted model of 0 heads (SIGFPE in a job's translation)."""
    import copy
    import shutil

    import torch

    from paramill.errors import InputError
    from paramill.nmt.checkpoints import CHECKPOINT
    from paramill.nmt.torch_engine import TorchTranslator

    full = torch.load(tiny["root"] / "model.pt", weights_only=False)
    cases = {"heads": ({"heads": 0}, r"ZeroDivisionError", r"converted, but CTranslate2 \S+ crashed \(SIGFPE\)"),
             "divides": ({"heads": 3}, r"AssertionError: Model dimension must be divisible",
                         r"converted, but CTranslate2 \S+ cannot load this model directory or decode"),
             "layers": ({"enc_layers": 2, "dec_layers": 2}, r"ValueError: Missing key in checkpoint",
                        r"CTranslate2's converter cannot convert it \(KeyError")}
    for what, (options, engine_says, convert_says) in cases.items():
        data = {**full, "opt": copy.copy(full["opt"])}
        for key, value in options.items():
            setattr(data["opt"], key, value)
        torch.save(data, tmp_path / f"{what}.pt")
        with pytest.raises(InputError, match=rf"^{tmp_path / what}\.pt: {convert_says}"):
            convert_mod.convert(tmp_path / f"{what}.pt", *tiny["spm"], tmp_path / f"{what}-ct2")
        assert not (tmp_path / f"{what}-ct2").exists()
        bundle = tmp_path / f"{what}-bundle"
        shutil.copytree(tiny["root"] / "ct2", bundle)
        torch.save(data, bundle / CHECKPOINT)
        with pytest.raises(InputError, match=rf"onmt\.pt: an OpenNMT-py checkpoint that cannot be rebuilt, "
                                             rf"its options not those of its weights \({engine_says}"):
            TorchTranslator(bundle)


def test_a_cut_checkpoint_is_an_error_naming_it(tiny, tmp_path):
    from paramill.nmt.checkpoints import CHECKPOINT, load_checkpoint

    data = (tiny["root"] / "ct2" / CHECKPOINT).read_bytes()
    for cut in range(10, len(data), len(data) // 150):  # some cuts fail in torch as OSError
        (tmp_path / "cut.pt").write_bytes(data[:cut])
        with pytest.raises(ValueError, match=r"cut\.pt: not an OpenNMT-py checkpoint paramill reads"):
            load_checkpoint(tmp_path / "cut.pt")
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.pt")


def test_a_ctranslate2_directory_it_cannot_read_is_an_error_naming_it(tiny, back, shard, tmp_path, monkeypatch):
    import shutil
    import struct

    import ctranslate2

    from paramill.errors import InputError
    from paramill.nmt import engine

    good = tiny["root"] / "ct2"
    data = (good / "model.bin").read_bytes()
    name = b"decoder/embeddings/weight\x00"
    at = data.index(name) + len(name)  # its rank (1 byte), its dims (4 bytes each), its type, its bytes
    rank = data[at]
    dims = list(struct.unpack_from(f"<{rank}I", data, at + 1))
    declared = 60_000 * dims[0] * dims[1] * 4  # a shape and a byte count that agree, far past the file
    inflated = bytearray(data)
    struct.pack_into("<I", inflated, at + 1, dims[0] * 60_000)
    struct.pack_into("<I", inflated, at + 1 + 4 * rank + 1, declared)
    assert declared > 1_000 * len(data)  # 1.6 GB from 808 KB
    renamed = bytearray(data)
    renamed[at - 3] = 0xF8  # a byte of the variable's name that is not UTF-8
    damages = {"cut": lambda d: (d / "model.bin").write_bytes(data[:len(data) // 3]),
               "empty": lambda d: (d / "model.bin").write_bytes(b""),
               "inflated": lambda d: (d / "model.bin").write_bytes(bytes(inflated)),
               "renamed": lambda d: (d / "model.bin").write_bytes(bytes(renamed)),
               "vocabulary": lambda d: (d / "source_vocabulary.json").write_text('["<unk>", "a'),
               "config": lambda d: (d / "config.json").write_text("{"),
               "no model": lambda d: (d / "model.bin").unlink()}
    for what, damage in damages.items():
        folder = tmp_path / what.replace(" ", "-")
        shutil.copytree(good, folder)
        damage(folder)
        with pytest.raises(InputError, match=rf"^{folder}: CTranslate2 \S+ cannot load this model "
                                             r"directory.*: .+convert the model again"):
            load_translator(folder, TranslateSettings(device="cpu"), threads=1)
    assert load_translator(good, TranslateSettings(device="cpu"), threads=1)  # the copy it was made from
    # sampling's worker processes open the models too: the error is this one, not a pool broken
    from paramill.nmt.sampling import SampleSettings, sample_shard

    small = tmp_path / "small.parquet"
    pl.read_parquet(shard).head(4).write_parquet(small)
    with pytest.raises(InputError, match=rf"^{tmp_path / 'cut'}: CTranslate2"):
        sample_shard(small, tmp_path / "cut", back, *tiny["spm"], tmp_path / "sampled.parquet",
                     SampleSettings(samples=2, constraint_sets=1, block=2), threads=2)
    assert not list(tmp_path.glob("sampled*"))
    for text in ('["<unk>", "a', '{"a": 1}', '[1, 2]'):  # the vocabulary sampling reads itself
        (tmp_path / "vocabulary" / "target_vocabulary.json").write_text(text)
        with pytest.raises(InputError, match=r"vocabulary/\w+_vocabulary\.json: not a CTranslate2 vocabulary"):
            sample_shard(small, tmp_path / "vocabulary", back, *tiny["spm"], tmp_path / "sampled.parquet",
                         SampleSettings(samples=2, constraint_sets=1, block=2), threads=1)
    # an error of the device is not the model's: raised as it is
    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA failed with error out of memory")

    monkeypatch.setattr(ctranslate2, "Translator", out_of_memory)
    with pytest.raises(RuntimeError, match="out of memory"):
        engine.ct2_model(ctranslate2, good, device="cpu")


def test_a_ctranslate2_model_that_would_crash_ctranslate2_is_an_error_naming_it(tiny, tmp_path, monkeypatch):
    """Settings or shapes that do not fit together end CTranslate2's process with a signal:
    tried in a child first, the job's error names the folder."""
    import shutil
    import struct

    from paramill.errors import InputError
    from paramill.nmt import trial

    data = (tiny["root"] / "ct2" / "model.bin").read_bytes()

    def variable(name):  # where its rank is; its dims follow, then its type, its bytes, its data
        at = data.index(name.encode() + b"\x00") + len(name) + 1
        return at, data[at]

    def changed(name, *, value=None, dims=None):
        out = bytearray(data)
        at, rank = variable(name)
        if dims is not None:
            struct.pack_into(f"<{rank}I", out, at + 1, *dims)
        if value is not None:
            struct.pack_into("<h", out, at + 1 + 4 * rank + 1 + 4, value)
        return bytes(out)

    at, rank = variable("encoder/layer_0/ffn/linear_0/weight")
    rows, cols = struct.unpack_from("<2I", data, at + 1)
    cases = {"heads": (changed("decoder/num_heads", value=0), r"crashed \(SIGFPE\)"),
             "alignment": (changed("decoder/alignment_layer", value=3), r"crashed \(SIG(ABRT|SEGV)\)"),
             "shape": (changed("encoder/layer_0/ffn/linear_0/weight", dims=(rows * cols, 1)),
                       r"crashed \(SIGSEGV\)"),
             "three heads": (changed("decoder/num_heads", value=3),
                             r"cannot load this model directory or decode with it: new shape size")}
    for what, (model_bin, said) in cases.items():
        folder = tmp_path / what.replace(" ", "-")
        shutil.copytree(tiny["root"] / "ct2", folder)
        (folder / "model.bin").write_bytes(model_bin)
        with pytest.raises(InputError, match=rf"^{folder}: CTranslate2 \S+ {said}"):
            load_translator(folder, TranslateSettings(device="cpu"), threads=1)
    # a model tried is not tried again while its files are as they were
    calls = []
    real = trial.subprocess.run
    folder = tmp_path / "good"
    shutil.copytree(tiny["root"] / "ct2", folder)
    monkeypatch.setattr(trial.subprocess, "run", lambda *a, **k: calls.append(a) or real(*a, **k))
    for _ in range(2):
        load_translator(folder, TranslateSettings(device="cpu"), threads=1)
    assert len(calls) == 1
    (folder / "model.bin").write_bytes(changed("decoder/num_heads", value=0))
    with pytest.raises(InputError, match="crashed"):
        load_translator(folder, TranslateSettings(device="cpu"), threads=1)
    assert len(calls) == 2
    # a child that cannot import CTranslate2 says so: the environment's fault, not the model's
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv(trial.TRIED_ENV, "[]")  # tried already by another test of this process
    (tmp_path / "ctranslate2.py").write_text("raise ImportError('no CTranslate2 here')\n")
    with pytest.raises(RuntimeError, match="could not import CTranslate2 \\(no CTranslate2 here"):
        trial.try_model(tiny["root"] / "ct2", "4", timeout=60)


def test_sentencepiece_models_swapped_or_of_another_model_are_refused_before_any_work(tiny, back, shard, tmp_path):
    """The source and target SentencePiece models given the wrong way round cut every
    sentence into pieces the model reads as <unk>: the whole shard was translated into noise
    without a word. The model's vocabulary is compared with the pieces first (its own hold
    98-99.5% of it, the other language's about 20%)."""
    from paramill.errors import InputError
    from paramill.nmt.sampling import SampleSettings, sample_shard
    from paramill.nmt.subwords import Segmenter, check_fit

    cs_spm, en_spm = tiny["spm"]
    ct2 = tiny["root"] / "ct2"
    assert check_fit(Segmenter(cs_spm), ct2, "source") > 0.9 and check_fit(Segmenter(en_spm), back, "source") > 0.9
    with pytest.raises(InputError, match=rf"^{en_spm}: a SentencePiece model that does not fit the source side "
                                         rf"of {ct2}: its pieces are \d+% of that side's [\d,]+ tokens"):
        translate_shard(shard, ct2, en_spm, cs_spm, tmp_path / "t.parquet", TranslateSettings(device="cpu"))
    with pytest.raises(InputError, match=rf"^{cs_spm}: a SentencePiece model that does not fit the target side"):
        translate_shard(shard, ct2, cs_spm, cs_spm, tmp_path / "t.parquet", TranslateSettings(device="cpu"))
    with pytest.raises(InputError, match=rf"^{cs_spm}: a SentencePiece model that does not fit the source side of {back}"):
        sample_shard(shard, back, ct2, cs_spm, en_spm, tmp_path / "s.parquet", SampleSettings(device="cpu"))
    assert not list(tmp_path.iterdir())


def test_the_launcher_leaves_out_vocabulary_lines_opennmt_cannot_read_back(tmp_path, monkeypatch, capsys):
    from paramill.nmt.launch import readable_vocabularies

    monkeypatch.chdir(tmp_path)
    (tmp_path / "vocab.src").write_text("a\t5\nb\t2\n", encoding="utf-8")
    (tmp_path / "vocab.tgt").write_text("x\t9\n\t1\n\u00a0\t1\ny\t1\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text("src_vocab: vocab.src\ntgt_vocab: vocab.tgt\n")
    readable_vocabularies(["-config", "c.yaml", "-n_sample", "-1"])
    assert (tmp_path / "vocab.src").read_text() == "a\t5\nb\t2\n"
    assert (tmp_path / "vocab.tgt").read_text() == "x\t9\ny\t1\n"
    assert "2 token(s) of vocab.tgt left out" in capsys.readouterr().err
    readable_vocabularies(["-config", "missing.yaml"])  # nothing to read: nothing done


def test_int8_quantization_converts_and_translates(tiny, tmp_path):
    meta = convert_mod.convert(tiny["root"] / "model.pt", *tiny["spm"], tmp_path / "q", "int8")
    assert meta["quantization"] == "int8"
    assert (tmp_path / "q" / "model.bin").stat().st_size < (tiny["root"] / "ct2" / "model.bin").stat().st_size
    translator = load_translator(tmp_path / "q", TranslateSettings(), threads=1)
    (hyps,) = translate_pieces(translator, Segmenter(tiny["spm"][0]).encode(["Muž čte."]),
                               TranslateSettings(beam_size=2, max_decoding_length=20))
    assert hyps and hyps[0][1] > 0


def test_device_switch():
    assert device.pick("cpu") == "cpu"
    assert device.pick("auto") == ("cuda" if device.cuda_count() else "cpu")
    if device.cuda_count() == 0:
        with pytest.raises(ValueError, match="no GPU is visible"):
            device.pick("cuda")


def test_dual_cross_entropy_is_built_from_the_models_own_scores(tiny, back, shard, tmp_path, monkeypatch):
    """dual_xent = |H_f - H_b| + (H_f + H_b)/2 with each H the model's own mean NLL
    (score_batch, EOS included), of the tiny CS->EN and EN->CS models."""
    import ctranslate2

    from paramill.filters.base import score_shard
    from paramill.filters.dual_xent import DualXent
    from paramill.nmt.score import load_scorer, nll_per_token

    cs_spm, en_spm = tiny["spm"]
    ct2, back = str(tiny["root"] / "ct2"), str(back)
    filt = DualXent(cs_en=ct2, en_cs=back, cs_spm=str(cs_spm), en_spm=str(en_spm), device="cpu")
    rows = pl.read_parquet(shard).head(6)
    cs, en = rows["cs"].to_list(), rows["en"].to_list()
    got = filt.pair_scores(cs, en)
    model, model_back = ctranslate2.Translator(ct2, device="cpu"), ctranslate2.Translator(back, device="cpu")
    cs_p, en_p = Segmenter(cs_spm).encode(cs), Segmenter(en_spm).encode(en)
    for i, (h_f, h_b, score) in enumerate(got):
        fwd = model.score_batch([cs_p[i]], [en_p[i]])[0].log_probs
        bwd = model_back.score_batch([en_p[i]], [cs_p[i]])[0].log_probs
        assert len(fwd) == len(en_p[i]) + 1  # EOS scored
        assert h_f == pytest.approx(-sum(fwd) / len(fwd), rel=1e-5)
        assert h_b == pytest.approx(-sum(bwd) / len(bwd), rel=1e-5)
        assert score == pytest.approx(abs(h_f - h_b) + (h_f + h_b) / 2)
    assert nll_per_token(load_scorer(ct2, "cpu"), [], []) == []
    # per shard: every candidate of a pair carries its pair's score
    candidates = tmp_path / "cand.parquet"
    pq.write_table(pa.Table.from_pylist([
        {"pair_id": pid, "candidate_id": f"{pid}:beam:{r}", "en_ref": ref, "candidate": ref,
         "method": "beam", "rank": r, "fwd_nll": 0.1, "bwd_nll": None, "n_tokens": 1,
         "constraint_set": None, "cluster": None}
        for pid, ref in zip(rows["pair_id"], en) for r in (1, 2)], schema=CANDIDATES), candidates)
    score_shard(filt, candidates, tmp_path / "dx.parquet", source_shard=shard)
    scores = pl.read_parquet(tmp_path / "dx.parquet")["dual_xent"].to_list()
    assert scores == pytest.approx([s for _, _, s in got for _ in (1, 2)], rel=1e-5)
    # its batch size is launch-only: it bounds memory, each pair scored as alone (float noise)
    alone = DualXent(cs_en=ct2, en_cs=back, cs_spm=str(cs_spm), en_spm=str(en_spm), device="cpu",
                     batch_size=1).pair_scores(cs, en)
    assert [x for row in alone for x in row] == pytest.approx([x for row in got for x in row], rel=1e-5)
    # so is its unit: batches of 40 padded source subwords, each pair's score as alone
    tokens = DualXent(cs_en=ct2, en_cs=back, cs_spm=str(cs_spm), en_spm=str(en_spm), device="cpu",
                      batch_size=40, batch_type="tokens")
    assert [x for row in tokens.pair_scores(cs, en) for x in row] == pytest.approx(
        [x for row in alone for x in row], rel=1e-5)
    import paramill.filters.dual_xent as dual_module

    from paramill import config
    asked = []
    monkeypatch.setattr(dual_module, "nll_per_token",
                        lambda scorer, s, t, size, unit: asked.append((size, unit)) or [1.0] * len(s))
    tokens.pair_scores(cs, en)
    assert asked == [(40, "tokens")] * 2  # both directions, batched in subwords
    assert config.marked("launch", "filters", "dual_xent") == ("batch_size", "batch_type")


def test_constrained_sampling_never_emits_a_suppressed_segmentation(tiny, shard):
    import ctranslate2

    from paramill.nmt.sampling import SampleSettings, constraint_tokens, contains, sample_set, suppressions

    cs_spm, en_spm = tiny["spm"]
    cs_seg, en_seg = Segmenter(cs_spm), Segmenter(en_spm)
    translator = ctranslate2.Translator(str(tiny["root"] / "ct2"), device="cpu")
    rows = pl.read_parquet(shard).head(5)
    settings = SampleSettings(samples=20)
    checked = free_hits = 0
    for cs, en in zip(rows["cs"], rows["en"]):
        src = cs_seg.encode([cs])[0]
        # unconstrained, the model emits the reference's pieces; constrained, never
        free = sample_set(translator, src, [], settings)
        for tokens in constraint_tokens(en, 3, 0.5, 1, cs):
            banned = suppressions(tokens, en_seg)
            assert banned and all(b[0].startswith("\u2581") for b in banned)
            free_hits += sum(contains(h, b) for h in free for b in banned)
            for hyp in sample_set(translator, src, banned, settings):
                assert not any(contains(hyp, b) for b in banned), (hyp, banned)
                checked += 1
        assert len(free) == 20
    assert checked == 5 * 3 * 20
    assert free_hits > 0  # unconstrained, the model does emit those sequences


def test_sampled_shard_dual_scores_determinism_and_ranks(tiny, back, shard, tmp_path):
    from paramill.nmt.sampling import SampleSettings, sample_shard
    from paramill.nmt.score import load_scorer, nll_per_token

    cs_spm, en_spm = tiny["spm"]
    ct2 = str(tiny["root"] / "ct2")
    small = tmp_path / "small.parquet"
    pl.read_parquet(shard).head(12).write_parquet(small)
    settings = SampleSettings(samples=10, constraint_sets=3, block=5, threshold=100.0, n=5)
    outs = []
    for threads in (1, 2, 2):
        out = tmp_path / f"s{len(outs)}.parquet"
        stats = sample_shard(small, ct2, back, cs_spm, en_spm, out, settings, threads=threads)
        outs.append(pl.read_parquet(out))
    assert outs[0].equals(outs[1]) and outs[1].equals(outs[2])  # seeded, whatever the threads
    table = outs[0]
    assert stats["sources"] == 12 and stats["sampled"] == 12 * 3 * 10
    assert table.group_by("pair_id").len()["len"].max() <= 5
    assert table["method"].unique().to_list() == ["sample"]
    for _, group in table.group_by("pair_id"):
        assert group["rank"].to_list() == list(range(1, group.height + 1))
        assert group["cluster"].n_unique() == group.height  # one per cluster
        assert (group["cluster"] > 0).all()  # never the reference's cluster
        total = (group["fwd_nll"] + group["bwd_nll"]).to_list()
        assert total == sorted(total)  # ranked by the dual score
    # the dual score is the sum of the two models' own per-token NLLs
    scorer, scorer_back = load_scorer(ct2, "cpu"), load_scorer(back, "cpu")
    cs_seg, en_seg = Segmenter(cs_spm), Segmenter(en_spm)
    sources = dict(zip(*pl.read_parquet(small).select("pair_id", "cs")))
    for row in table.iter_rows(named=True):  # scored on the candidate's Viterbi segmentation
        src, hyp = cs_seg.encode([sources[row["pair_id"]]])[0], en_seg.encode([row["candidate"]])[0]
        assert row["n_tokens"] == len(hyp)
        assert row["fwd_nll"] == pytest.approx(nll_per_token(scorer, [src], [hyp])[0], rel=1e-4)
        assert row["bwd_nll"] == pytest.approx(nll_per_token(scorer_back, [hyp], [src])[0], rel=1e-4)
    # the threshold drops candidates
    strict = sample_shard(small, ct2, back, cs_spm, en_spm, tmp_path / "strict.parquet",
                          SampleSettings(samples=10, constraint_sets=3, block=5, threshold=0.0))
    assert strict["below_threshold"] == 0 and strict["output"] == 0


def test_a_sampling_score_batch_out_of_gpu_memory_is_scored_again_at_half_the_size(
        tiny, back, shard, tmp_path, monkeypatch):
    """ParaBank 2 sampling scores each block's candidates in batches of nmt.sample.batch_size:
    one that runs out of GPU memory is scored again at half the size, which the blocks after
    keep; the same table as at that size, the halvings in the provenance. (A stand-in raises
    CTranslate2's error: no GPU here.)"""
    from paramill.nmt import sampling
    from paramill.nmt.sampling import SampleSettings

    real, asked = sampling.nll_per_token, []

    def small_card(scorer, sources, targets, batch_size=32, batch_type="examples"):
        asked.append(batch_size)
        if batch_size > 8:
            raise RuntimeError("CUDA failed with error out of memory")
        return real(scorer, sources, targets, batch_size, batch_type)

    cs_spm, en_spm = tiny["spm"]
    ct2 = str(tiny["root"] / "ct2")
    small = tmp_path / "small.parquet"
    pl.read_parquet(shard).head(10).write_parquet(small)
    settings = SampleSettings(samples=6, constraint_sets=2, block=5, threshold=100.0, n=3, batch_size=32)
    monkeypatch.setattr(sampling, "nll_per_token", small_card)
    stats = sampling.sample_shard(small, ct2, back, cs_spm, en_spm, tmp_path / "fitted.parquet", settings)
    assert asked == [32, 16, 8, 8, 8, 8]  # the first block halves twice; the second starts at 8
    assert [h["batch_size"] for h in stats["out_of_gpu_memory"]] == [32, 16]
    record = json.loads((tmp_path / "fitted.parquet.prov.json").read_text())
    assert record["sampling"]["out_of_gpu_memory"] == stats["out_of_gpu_memory"]
    monkeypatch.setattr(sampling, "nll_per_token", real)
    direct = sampling.sample_shard(small, ct2, back, cs_spm, en_spm, tmp_path / "direct.parquet",
                                   dataclasses.replace(settings, batch_size=8))
    assert direct["out_of_gpu_memory"] == []
    assert pl.read_parquet(tmp_path / "fitted.parquet").equals(pl.read_parquet(tmp_path / "direct.parquet"))


def test_a_sampling_worker_killed_says_so_and_leaves_no_output(tiny, back, shard, tmp_path, monkeypatch):
    """Diverse sampling on the CPU runs a pool of worker processes; one killed (SIGKILL, as a
    job's memory limit does) is paramill.pools' WorkerLost naming the shard, and the shard's
    table is not left half-written."""
    from concurrent.futures import ProcessPoolExecutor

    import paramill.nmt.sampling as sampling
    from paramill.run.pools import WorkerLost

    from . import workers

    def pool(count, initializer, initargs, mp_context):  # the workers die as they start
        return ProcessPoolExecutor(count, initializer=workers.killed_on_start, mp_context=mp_context)

    monkeypatch.setattr(sampling, "ProcessPoolExecutor", pool)
    cs_spm, en_spm = tiny["spm"]
    ct2 = str(tiny["root"] / "ct2")
    small = tmp_path / "small.parquet"
    pl.read_parquet(shard).head(12).write_parquet(small)
    out = tmp_path / "s.parquet"
    with pytest.raises(WorkerLost, match=r"killed \(signal SIGKILL\) while small\.parquet was sampled"):
        sampling.sample_shard(small, ct2, back, cs_spm, en_spm, out,
                              sampling.SampleSettings(samples=4, constraint_sets=2, block=5), threads=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.parquet"]


def test_subword_sampling_is_seeded_and_draws_from_the_nbest(spm_models):
    import random

    import sentencepiece as spm

    from paramill.nmt.launch import sample_segmentation

    sp = spm.SentencePieceProcessor(model_file=str(spm_models[0]))
    table = [sp.get_score(i) for i in range(sp.get_piece_size())]
    text = "Výzkum ukazuje, že lidé čtou knihy."

    def draws(seed, alpha, nbest=-1):
        rng = random.Random(seed)
        return [tuple(sample_segmentation(sp, text, nbest, alpha, rng, table)) for _ in range(40)]

    for nbest in (-1, 8):
        assert draws(13, 0.1, nbest) == draws(13, 0.1, nbest) != draws(14, 0.1, nbest)
        assert all("".join(d).replace("▁", " ").strip() == text for d in draws(13, 0.1, nbest))
    best8 = {tuple(sp.id_to_piece(i) for i in ids) for ids in sp.nbest_encode(text, nbest_size=8, out_type=int)}
    assert set(draws(13, 0.1, 8)) <= best8 and len(set(draws(13, 0.1, 8))) > 3
    # -1, the whole lattice: segmentations beyond the sentence's 64 best, which stood in for it
    best64 = {tuple(sp.id_to_piece(i) for i in ids) for ids in sp.nbest_encode(text, nbest_size=64, out_type=int)}
    assert len(set(draws(13, 0.1)) - best64) > 5
    viterbi = tuple(sp.encode(text, out_type=str))
    assert draws(13, 50.0).count(viterbi) > 35  # a sharp alpha keeps the best segmentation


def test_the_lattice_sampler_draws_as_sentencepieces_own_and_its_best_path_is_viterbi(shard, spm_models):
    """The seeded whole-lattice sampler against SentencePiece's own (unseeded) one on the
    sample's sentences: as sharp as Viterbi at a large alpha (its lattice holds SentencePiece's
    pieces and scores, an unknown character as SentencePiece scores it), and at alpha 0.1 as
    many words kept at their best segmentation (the sentence's 64 best kept ~90% of Czech news
    words so, SentencePiece's sampler ~35%)."""
    import random

    import sentencepiece as spm

    from paramill.nmt import lattice

    texts = pq.read_table(shard, columns=["cs", "en"]).to_pydict()
    for lang, model in zip(("cs", "en"), spm_models):
        sp = spm.SentencePieceProcessor(model_file=str(model))
        sentences = texts[lang][:200] + ["Ω≈ç√∫ 日本語 ＡＢＣ x\u2060y", "  two  spaces\tand a tab "]
        rng = random.Random(5)
        assert [lattice.sampler(sp, 1000.0)(t, rng) for t in sentences] == [
            [sp.id_to_piece(i) for i in sp.encode(t)] for t in sentences]

        def kept(draw):
            same = total = 0
            for text in sentences[:200]:
                best, drawn = lattice.words(sp.encode(text, out_type=str)), lattice.words(draw(text))
                if len(best) == len(drawn):
                    same += sum(a == b for a, b in zip(best, drawn))
                    total += len(best)
            return same / total

        ours = kept(lambda t: lattice.sampler(sp, 0.1)(t, rng))
        theirs = kept(lambda t: sp.encode(t, out_type=str, enable_sampling=True, nbest_size=-1, alpha=0.1))
        assert abs(ours - theirs) < 0.04 and ours < 0.8, (lang, ours, theirs)


def test_the_launcher_runs_tools_in_turn_each_from_a_fresh_seeding(monkeypatch):
    """``build_vocab ... --then train ...`` in one process: each tool starts from the seeding
    a process of its own would (the same draws), with its own arguments; a failing tool
    stops the chain with its status."""
    import random
    import sys
    import types
    import warnings

    from paramill.nmt import launch

    seen = []

    def tool(name, status=0):
        module = types.ModuleType(name)

        def main():
            seen.append((name, list(sys.argv), random.random()))
            with warnings.catch_warnings(record=True) as caught:  # under the launcher's filters
                warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated.", FutureWarning)
                warnings.warn("a warning of the tool's own", FutureWarning)
            assert [str(w.message) for w in caught] == ["a warning of the tool's own"]
            return status

        module.main = main
        monkeypatch.setitem(sys.modules, name, module)
        return name

    monkeypatch.setattr(launch, "seed_subword_sampling", lambda seed: None)
    # OpenNMT-py's patches (their own tests): not on this process's classes and signals
    monkeypatch.setattr(launch, "checkpoint_on_sigterm", lambda: None)
    monkeypatch.setattr(position, "track", lambda train_from: None)
    monkeypatch.setitem(launch.TOOLS, "build_vocab", tool("fake_vocab"))
    monkeypatch.setitem(launch.TOOLS, "train", tool("fake_train"))
    monkeypatch.setitem(launch.TOOLS, "translate", tool("fake_translate", status=3))
    assert launch.main(["build_vocab", "13", "-config", "a.yaml", "-n_sample", "-1",
                        "--then", "train", "-config", "a.yaml"]) == 0
    (_, argv1, draw1), (_, argv2, draw2) = seen
    assert argv1 == ["onmt_build_vocab", "-config", "a.yaml", "-n_sample", "-1"]
    assert argv2 == ["onmt_train", "-config", "a.yaml"]
    assert draw1 == draw2  # reseeded before the second tool
    seen.clear()
    assert launch.main(["translate", "13", "--then", "train"]) == 3 and len(seen) == 1
    for bad in (["train"], ["train", "x"], ["train", "13", "--then"], ["train", "13", "--then", "rm"]):
        assert launch.main(bad) == 2


def test_a_failing_opennmt_run_names_its_tools(tmp_path):
    import sys

    from paramill.nmt.train import _run

    cmd = [sys.executable, "-m", "paramill.nmt.launch", "build_vocab", "13", "-config",
           "missing.yaml", "--then", "train", "-config", "missing.yaml"]
    with pytest.raises(RuntimeError, match=r"OpenNMT-py build_vocab then train failed with exit status [1-9]"):
        _run(cmd, dict(os.environ), tmp_path)


def test_training_twice_gives_the_same_model_bytes(tiny, monkeypatch, tmp_path):
    import hashlib
    import shutil

    made = []
    for name in ("a", "b"):
        root = tmp_path / name
        shutil.copytree(tiny["root"] / "data", root / "data")
        for model in tiny["spm"]:
            shutil.copy(model, root / model.name)
        monkeypatch.chdir(root)
        settings = NmtTrainSettings(**{**tiny_train(12).__dict__, "subword_alpha": 0.1, "subword_nbest": -1})
        train_nmt("cs-en", "data", "cs.model", "en.model", "model.pt", "work",
                  ModelSettings(layers=1, hidden_size=32, heads=2, ff_size=64, dropout=0.1), settings)
        made.append({p: hashlib.sha256((root / p).read_bytes()).hexdigest()
                     for p in ("model.pt", "work/vocab.src", "work/vocab.tgt", "work/opennmt.yaml")})
    assert made[0] == made[1]


# --- the decoding engine (paramill.nmt.engine) -------------------------------------------

FAKE_CUBLAS = "int paramill_fake_cublas(void) { return 1234; }\n"


def _fake_cublas_wheel(root):
    """A site-packages folder laid out as nvidia-cublas-cu12 installs it, holding two
    libraries compiled here with the CUDA 12 sonames (each answering a marker function)."""
    import shutil
    import subprocess

    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build the stand-in libraries")
    lib = root / "site" / "nvidia" / "cublas" / "lib"
    lib.mkdir(parents=True)
    (root / "fake.c").write_text(FAKE_CUBLAS)
    for name in ("libcublasLt.so.12", "libcublas.so.12"):
        subprocess.run(["cc", "-shared", "-fPIC", f"-Wl,-soname,{name}", "-o", str(lib / name),
                        str(root / "fake.c")], check=True)
    return root / "site"


def test_cuda12_cublas_is_loaded_from_the_wheel_so_a_dlopen_by_soname_finds_it(tmp_path):
    """CTranslate2 opens libcublas.so.12 by soname; after load_cuda_libraries the same
    dlopen gets the wheel's library (and without it, nothing: no LD_LIBRARY_PATH is set)."""
    import subprocess
    import sys

    site = _fake_cublas_wheel(tmp_path)
    probe = (
        "import ctypes, json, sys\n"
        "from paramill.nmt import engine\n"
        "before = engine.cuda_library_problem([])\n"
        "loaded = engine.load_cuda_libraries([sys.argv[1]])\n"
        "after = engine.cuda_library_problem([sys.argv[1]])\n"
        "value = ctypes.CDLL('libcublas.so.12').paramill_fake_cublas()\n"
        "print(json.dumps({'before': before, 'loaded': loaded, 'after': after, 'value': value}))\n")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    done = subprocess.run([sys.executable, "-c", probe, str(site)], capture_output=True, text=True,
                          env=env, check=True)
    result = json.loads(done.stdout)
    if result["before"] is None:
        pytest.skip("a real CUDA 12 cuBLAS is already loadable on this machine")
    assert "libcublasLt.so.12" in result["before"] and "nvidia-cublas-cu12" not in result["before"]
    assert result["loaded"] == {name: str(site / "nvidia/cublas/lib" / name)
                                for name in ("libcublasLt.so.12", "libcublas.so.12")}
    assert result["after"] is None and result["value"] == 1234


def _no_cublas(monkeypatch, gpus=1):
    """A GPU node where CUDA 12's cuBLAS is missing: one visible GPU, libraries that cannot load."""
    from paramill.nmt import engine

    monkeypatch.setattr(engine, "CUDA12_LIBRARIES", ("libparamill-missing-cublas.so.12",))
    monkeypatch.setattr(engine, "_LOADED", {})
    monkeypatch.setattr(engine.device, "cuda_count", lambda: gpus)
    monkeypatch.setattr(engine, "_candidate_folders", lambda search: [])


@pytest.mark.parametrize("requested", ["auto", "cuda"])
def test_a_gpu_the_engine_cannot_use_stops_the_job_before_any_work(tiny, shard, tmp_path, monkeypatch,
                                                                  capfd, requested):
    from paramill.cli import main

    _no_cublas(monkeypatch)
    out = tmp_path / "cand.parquet"
    status = main(["nmt", "translate", "--shard", str(shard), "--model", str(tiny["root"] / "ct2"),
                   "--src-spm", str(tiny["spm"][0]), "--tgt-spm", str(tiny["spm"][1]),
                   "--out", str(out), "--settings", json.dumps({"device": requested})])
    err = capfd.readouterr().err
    assert status == 2
    (line,) = [x for x in err.splitlines() if x.startswith("paramill nmt translate: error:")]
    assert f"nmt.advanced.translate.device is {requested} and 1 GPU(s) are visible" in line
    assert "libparamill-missing-cublas.so.12" in line and "nvidia-cublas-cu12" in line
    assert "device: cpu" in line
    assert "translate shard" not in err and "engine ctranslate2" not in err  # no work began
    assert not out.exists() and not list(tmp_path.iterdir())


def test_sampling_and_scoring_refuse_the_same_gpu(tiny, shard, tmp_path, monkeypatch):
    from paramill.nmt.engine import GpuUnavailable
    from paramill.nmt.sampling import SampleSettings, sample_shard
    from paramill.nmt.score import load_scorer

    _no_cublas(monkeypatch)
    ct2, (cs_spm, en_spm) = tiny["root"] / "ct2", tiny["spm"]
    with pytest.raises(GpuUnavailable, match="nmt.sample.device is auto"):
        sample_shard(shard, ct2, ct2, cs_spm, en_spm, tmp_path / "s.parquet", SampleSettings())
    with pytest.raises(GpuUnavailable, match="scoring.device is auto"):
        load_scorer(ct2, "auto")
    assert not list(tmp_path.iterdir())
    # the CPU asked for by name still decodes on that node
    assert load_scorer(ct2, "cpu").device == "cpu"


def test_cuda_asked_for_without_a_visible_gpu_is_refused(monkeypatch):
    from paramill.nmt import engine

    monkeypatch.setattr(engine.device, "cuda_count", lambda: 0)
    with pytest.raises(engine.GpuUnavailable, match="nmt.translate.device is cuda but no GPU"):
        engine.select("cuda")
    assert engine.select("auto").device == "cpu" and engine.select("cpu").device == "cpu"
    with pytest.raises(ValueError, match="must be auto, cpu or cuda"):
        engine.select("gpu")


def test_the_engine_is_named_in_provenance_and_the_log(tiny, shard, tmp_path, capfd):
    import ctranslate2

    out = tmp_path / "cand.parquet"
    stats = translate_shard(shard, tiny["root"] / "ct2", *tiny["spm"], out,
                            TranslateSettings(beam_size=2, batch_size=64))
    expected = device.pick("auto")
    assert stats["engine"]["name"] == "ctranslate2" and stats["engine"]["device"] == expected
    assert stats["engine"]["version"] == ctranslate2.__version__
    record = json.loads((tmp_path / "cand.parquet.prov.json").read_text())
    assert record["translation"]["engine"] == stats["engine"]
    assert f"paramill nmt translate: engine ctranslate2 {ctranslate2.__version__} on {expected}" \
        in capfd.readouterr().err


def test_a_decoding_batch_out_of_gpu_memory_is_decoded_again_at_half_the_batch_size(
        tiny, shard, tmp_path, monkeypatch, capfd):
    """A card smaller than the one nmt.translate.batch_size was set for (or a shard of long
    sentences) ran out of GPU memory and stopped the job; lowering batch_size, in the rule's
    params, then re-translated every shard done. The batch is decoded again at half the
    size, which the rest of the shard keeps, recorded in the provenance; the output is the
    one that size gives. (A stand-in raises CTranslate2's own error: no GPU here.)"""
    from paramill.nmt import translate

    real = translate.load_translator
    asked = []

    class SmallCard:  # CTranslate2 on a card where a batch of more than 16 sentences fails
        def __init__(self, inner, fits):
            self.inner, self.fits = inner, fits

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def translate_batch(self, source, **kw):
            asked.append(kw["max_batch_size"])
            if kw["max_batch_size"] > self.fits:
                raise RuntimeError("CUDA failed with error out of memory")
            return self.inner.translate_batch(source, **kw)

    def run(name, batch_size, fits=16):
        monkeypatch.setattr(translate, "load_translator", lambda *a, **kw: SmallCard(real(*a, **kw), fits))
        out = tmp_path / f"{name}.parquet"
        translate_shard(shard, tiny["root"] / "ct2", *tiny["spm"], out,
                        TranslateSettings(beam_size=2, batch_size=batch_size))
        return pl.read_parquet(out), json.loads(out.with_name(out.name + ".prov.json").read_text())

    fitted, record = run("halved", 64)
    assert asked == [64, 32, 16]
    assert record["translation"]["out_of_gpu_memory"] == [
        {"at": "shard-00000.parquet row 0", "batch_size": 64, "now": 32},
        {"at": "shard-00000.parquet row 0", "batch_size": 32, "now": 16}]
    assert record["params"]["batch_size"] == 64  # as configured: no other shard re-runs
    assert ("paramill nmt translate: shard-00000.parquet row 0: out of GPU memory at batch_size 64; "
            "the rest goes on at 32") in capfd.readouterr().err
    direct, plain = run("direct", 16)
    assert fitted.equals(direct) and plain["translation"]["out_of_gpu_memory"] == []
    # a card where not even one sentence fits: the error stands, nothing written
    with pytest.raises(RuntimeError, match="out of memory"):
        run("none", 4, fits=0)
    assert not (tmp_path / "none.parquet").exists()
    from paramill.cli import out_of_memory

    assert out_of_memory(RuntimeError("CUDA failed with error out of memory")).startswith("out of GPU memory")


# --- the opennmt-py engine (torch): what stands in for CTranslate2 on a GPU it cannot use ---

def _engines(tiny, settings=None):
    from paramill.nmt.engine import select

    bundle = tiny["root"] / "ct2"
    settings = settings or TranslateSettings()
    return (load_translator(bundle, settings, threads=1, engine=select("cpu")),
            load_translator(bundle, settings, threads=1,
                            engine=select("cpu", engine="opennmt-py", models=[bundle])))


def test_every_bundle_carries_the_checkpoint_without_its_optimizer(tiny):
    import torch

    from paramill.nmt.checkpoints import CHECKPOINT

    from paramill.nmt.checkpoints import load_checkpoint

    bundled = load_checkpoint(tiny["root"] / "ct2" / CHECKPOINT)  # weights-only: what OpenNMT-py writes
    full = load_checkpoint(tiny["root"] / "model.pt")
    assert sorted(bundled) == ["generator", "model", "opt", "vocab"] and "optim" in full
    assert all(torch.equal(bundled["model"][k], full["model"][k]) for k in full["model"])
    assert (tiny["root"] / "ct2" / CHECKPOINT).stat().st_size < (tiny["root"] / "model.pt").stat().st_size


@pytest.mark.parametrize("settings", [
    TranslateSettings(beam_size=12), TranslateSettings(beam_size=4, min_decoding_length=0),
    TranslateSettings(beam_size=4, max_decoding_length=3), TranslateSettings(beam_size=4, length_penalty=1.0)])
def test_the_opennmt_engine_finds_ctranslate2s_translations_and_exact_costs(tiny, shard, settings):
    ct2, onmt = _engines(tiny, settings)
    src = Segmenter(tiny["spm"][0]).encode(pl.read_parquet(shard).head(60)["cs"].to_list())
    a, b = translate_pieces(ct2, src, settings), translate_pieces(onmt, src, settings)
    same = [(x[0], y[0]) for x, y in zip(a, b) if x[0][0] == y[0][0]]
    assert len(same) >= 0.95 * len(src)
    # costs: the model's NLL per piece (EOS included), exact on both (rescored where CT2 renormalises)
    assert max(abs(x[1] - y[1]) for x, y in same) < 1e-4


def test_the_opennmt_engine_scores_as_ctranslate2(tiny, shard):
    ct2, onmt = _engines(tiny)
    cs, en = (Segmenter(p) for p in tiny["spm"])
    frame = pl.read_parquet(shard).head(40)
    src, tgt = cs.encode(frame["cs"].to_list()), en.encode(frame["en"].to_list())
    a, b = ct2.score_batch(src, tgt, max_batch_size=16), onmt.score_batch(src, tgt, max_batch_size=7)
    for x, y, t in zip(a, b, tgt):
        assert len(y.log_probs) == len(t) + 1 == len(x.log_probs)
        assert max(abs(p - q) for p, q in zip(x.log_probs, y.log_probs)) < 1e-4
    with pytest.raises(ValueError, match="2 sources but 1 targets"):
        onmt.score_batch(src[:2], tgt[:1])


def test_a_batch_of_subwords_bounds_each_decoding_batch_on_both_engines(tiny, shard, tmp_path):
    """nmt.translate.batch_type tokens: a batch is as many sources, longest first, as fit
    batch_size subwords padded (CTranslate2's rule), so a shard of long sentences cannot make
    a batch of 64 of them; the OpenNMT-py engine refused it."""
    from paramill.nmt.torch_engine import TorchTranslator

    cut = TorchTranslator._chunks
    items = [[0] * n for n in (5, 3, 1, 0, 4, 2)]
    assert cut(items, 8, "tokens") == [[0], [4, 1], [5, 2, 3]]  # 1 x 5; 2 x 4; 3 x 2
    assert cut(items, 2, "tokens") == [[0], [4], [1], [5], [2, 3]]  # one at least, even over
    assert cut(items, 4, "examples") == [[0, 4, 1, 5], [2, 3]] and cut(items, 0, "tokens") == [[0, 4, 1, 5, 2, 3]]
    with pytest.raises(ValueError, match="examples or tokens"):
        cut(items, 4, "words")

    settings = TranslateSettings(beam_size=4, batch_type="tokens", batch_size=120)
    ct2, onmt = _engines(tiny, settings)
    asked = []

    class Spy:  # what CTranslate2 is asked for, and its answer
        def __getattr__(self, name):
            return getattr(ct2, name)

        def translate_batch(self, source, **kw):
            asked.append(kw)
            return ct2.translate_batch(source, **kw)

    src = Segmenter(tiny["spm"][0]).encode(pl.read_parquet(shard).head(60)["cs"].to_list())
    a, b = translate_pieces(Spy(), src, settings), translate_pieces(onmt, src, settings)
    assert [(k["batch_type"], k["max_batch_size"]) for k in asked] == [("tokens", 120)]
    same = [(x[0], y[0]) for x, y in zip(a, b) if x[0][0] == y[0][0]]
    assert len(same) >= 0.95 * len(src) and max(abs(x[1] - y[1]) for x, y in same) < 1e-4
    # the shard's table: the same contract, the unit in its provenance
    out = tmp_path / "cand.parquet"
    stats = translate_shard(shard, tiny["root"] / "ct2", *tiny["spm"], out, settings)
    frame = pl.read_parquet(out)
    assert stats["sources"] == 400 and frame.filter(pl.col("rank") == 1).height == frame["pair_id"].n_unique()
    record = json.loads((tmp_path / "cand.parquet.prov.json").read_text())
    assert record["params"]["batch_type"] == "tokens" and record["params"]["batch_size"] == 120


def test_opennmt_engine_sampling_is_seeded_topk_and_obeys_suppressions(tiny, shard):
    from paramill.nmt.sampling import contains
    from paramill.nmt.torch_engine import TorchTranslator

    cs, en = (Segmenter(p) for p in tiny["spm"])
    src = cs.encode(pl.read_parquet(shard).head(8)["cs"].to_list())
    engine = TorchTranslator(tiny["root"] / "ct2")
    free = engine.translate_batch(src, beam_size=1, sampling_topk=10, num_hypotheses=20)
    common = {}
    for r in free:
        for h in r.hypotheses:
            for w in range(1, 3):
                for i in range(len(h) - w + 1):
                    common[tuple(h[i:i + w])] = common.get(tuple(h[i:i + w]), 0) + 1
    banned = [list(k) for k, _ in sorted(common.items(), key=lambda kv: -kv[1])[:4]]
    assert any(len(b) == 2 for b in banned) or any(len(b) == 1 for b in banned)
    runs = []
    for _ in range(2):
        engine.seed(7)
        runs.append(engine.translate_batch(src, beam_size=1, sampling_topk=10, num_hypotheses=20,
                                           suppress_sequences=banned))
    assert [r.hypotheses for r in runs[0]] == [r.hypotheses for r in runs[1]]  # seeded
    hyps = [h for r in runs[0] for h in r.hypotheses]
    assert len(hyps) == 8 * 20 and len({tuple(h) for h in hyps}) > 8  # samples, not one beam
    assert not any(contains(h, b) for h in hyps for b in banned)
    assert any(contains(h, b) for r in free for h in r.hypotheses for b in banned)
    engine.seed(8)
    other = engine.translate_batch(src, beam_size=1, sampling_topk=10, num_hypotheses=20,
                                   suppress_sequences=banned)
    assert [r.hypotheses for r in other] != [r.hypotheses for r in runs[0]]
    greedy = engine.translate_batch(src, beam_size=1, sampling_topk=1, num_hypotheses=1)
    assert [r.hypotheses for r in greedy] == [r.hypotheses for r in engine.translate_batch(src, beam_size=1)]


def test_opennmt_engine_samples_many_sources_each_under_its_own_suppressions(tiny, shard):
    from paramill.nmt.sampling import contains
    from paramill.nmt.torch_engine import TorchTranslator

    cs = Segmenter(tiny["spm"][0])
    src = cs.encode(pl.read_parquet(shard).head(6)["cs"].to_list())
    engine = TorchTranslator(tiny["root"] / "ct2")
    engine.seed(3)
    free = engine.sample_sets(src, [[] for _ in src], 12, 10, max_decoding_length=40)
    # ban, per source, its own most frequent piece and pair of pieces of the free samples
    bans = []
    for hyps in free:
        counts: dict[tuple[str, ...], int] = {}
        for h in hyps:
            for w in (1, 2):
                for i in range(len(h) - w + 1):
                    counts[tuple(h[i:i + w])] = counts.get(tuple(h[i:i + w]), 0) + 1
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        bans.append([list(next(k for k, _ in top if len(k) == w)) for w in (1, 2)])
    engine.seed(3)
    kept = engine.sample_sets(src, bans, 12, 10, max_decoding_length=40, max_rows=25)  # 2 sources a batch
    assert [len(h) for h in kept] == [12] * len(src)
    for hyps, ban in zip(kept, bans):
        assert not any(contains(h, b) for h in hyps for b in ban)
    # unbanned, the samples did say those sequences
    assert all(any(contains(h, b) for h in hyps for b in ban) for hyps, ban in zip(free, bans))
    with pytest.raises(ValueError, match="2 sources but 1 suppression sets"):
        engine.sample_sets(src[:2], bans[:1], 3, 10)


def test_shards_decode_with_the_opennmt_engine_to_the_same_contract(tiny, back, shard, tmp_path, capfd):
    from paramill.nmt.sampling import SampleSettings, sample_shard

    small = tmp_path / "small.parquet"
    pl.read_parquet(shard).head(30).write_parquet(small)
    bundle = tiny["root"] / "ct2"
    stats = {engine: translate_shard(small, bundle, *tiny["spm"], tmp_path / f"{engine}.parquet",
                                     TranslateSettings(device="cpu", engine=engine, beam_size=4))
             for engine in ("ctranslate2", "opennmt-py")}
    assert stats["opennmt-py"]["engine"]["name"] == "opennmt-py"
    assert "paramill nmt translate: engine opennmt-py" in capfd.readouterr().err
    a, b = (pl.read_parquet(tmp_path / f"{e}.parquet") for e in ("ctranslate2", "opennmt-py"))
    assert a.select("candidate_id", "candidate").equals(b.select("candidate_id", "candidate"))
    assert (a["fwd_nll"] - b["fwd_nll"]).abs().max() < 1e-4
    record = json.loads((tmp_path / "opennmt-py.parquet.prov.json").read_text())
    assert record["translation"]["engine"]["name"] == "opennmt-py"
    out = tmp_path / "s.parquet"
    sampled = sample_shard(small, bundle, back, *tiny["spm"], out,
                           SampleSettings(device="cpu", engine="opennmt-py", samples=8, constraint_sets=2,
                                          block=10, threshold=100.0, n=3))
    frame = pl.read_parquet(out)
    assert sampled["engine"]["name"] == "opennmt-py" and sampled["sampled"] == 30 * 2 * 8
    assert frame.height and frame["bwd_nll"].null_count() == 0 and frame["cluster"].null_count() == 0
    again = sample_shard(small, bundle, back, *tiny["spm"], tmp_path / "s2.parquet",
                         SampleSettings(device="cpu", engine="opennmt-py", samples=8, constraint_sets=2,
                                        block=10, threshold=100.0, n=3))
    assert again["output"] == sampled["output"] and pl.read_parquet(tmp_path / "s2.parquet").equals(frame)


def test_on_a_gpu_ctranslate2_cannot_use_the_opennmt_engine_stands_in(tiny, tmp_path, monkeypatch):
    import torch

    from paramill.nmt import engine

    _no_cublas(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    bundle = tiny["root"] / "ct2"
    chosen = engine.select("auto", models=[bundle])
    assert (chosen.name, chosen.device) == ("opennmt-py", "cuda")
    assert "CTranslate2 cannot use the GPU" in chosen.note and "libparamill-missing-cublas" in chosen.note
    assert chosen.record()["note"] == chosen.note and "opennmt-py" in chosen.describe()
    # a bundle without the checkpoint (a CTranslate2 directory of the user's own): no stand-in
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(engine.GpuUnavailable, match="cannot stand in .*has no OpenNMT-py checkpoint"):
        engine.select("auto", models=[bare])
    with pytest.raises(engine.GpuUnavailable, match="engine ctranslate2 was asked for"):
        engine.select("auto", engine="ctranslate2", models=[bundle])
    with pytest.raises(ValueError, match="engine must be one of"):
        engine.select("auto", engine="onmt")


def test_opennmt_imports_without_the_packages_of_transforms_paramill_never_uses(tmp_path):
    import subprocess
    import sys

    probe = (
        "import importlib.abc, sys\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('spacy', 'fasttext', 'ahocorasick'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from paramill.nmt.onmt_import import import_onmt\n"
        "import_onmt()\n"
        "import onmt.transforms.terminology as terminology\n"
        "try:\n"
        "    terminology.spacy.load('en')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
        "print(sorted({'spacy', 'fasttext', 'ahocorasick'} & set(sys.modules)))\n"
        "try:\n"
        "    import spacy\n"
        "except ModuleNotFoundError:\n"
        "    print('not found')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "spacy is not installed: OpenNMT-py's terminology transform(s) need it" in lines[0]
    # the placeholders are OpenNMT-py's alone: other libraries (datasets) do not find them
    assert lines[1:] == ["[]", "not found"]


# --- on a GPU (pytest -m gpu on a machine with CUDA; skipped with the reason elsewhere) ----

@pytest.mark.gpu
def test_gpu_the_engine_auto_picks_decodes_on_cuda(tiny):
    """On a GPU node as installed: CTranslate2 where CUDA 12's cuBLAS loads, else the
    opennmt-py engine, which says why; never the CPU."""
    from paramill.nmt import engine

    chosen = engine.select("auto", models=[tiny["root"] / "ct2"])
    assert chosen.device == "cuda"
    problem = engine.cuda_library_problem()
    if problem is None:
        assert chosen.name == "ctranslate2" and chosen.libraries
    else:
        assert chosen.name == "opennmt-py" and problem in chosen.note


@pytest.mark.gpu
@pytest.mark.parametrize("engine_name,batch", [("auto", {}), ("opennmt-py", {}),
                                               ("opennmt-py", {"batch_type": "tokens", "batch_size": 512})])
def test_gpu_translation_decodes_on_cuda_with_costs(tiny, shard, tmp_path, engine_name, batch):
    out = tmp_path / "cand.parquet"
    gpu = translate_shard(shard, tiny["root"] / "ct2", *tiny["spm"], out,
                          TranslateSettings(device="cuda", engine=engine_name, beam_size=12, **batch))
    assert gpu["engine"]["device"] == "cuda" and gpu["candidates"] > 0
    frame = pl.read_parquet(out)
    assert frame["fwd_nll"].min() > 0 and (frame["rank"] == 1).all()
    cpu = translate_shard(shard, tiny["root"] / "ct2", *tiny["spm"], tmp_path / "cpu.parquet",
                          TranslateSettings(device="cpu", beam_size=12))
    assert cpu["engine"]["device"] == "cpu"
    both = frame.join(pl.read_parquet(tmp_path / "cpu.parquet"), on="candidate_id", suffix="_cpu")
    # the same model and beam: the same 1-best nearly everywhere, costs within float noise
    assert (both["candidate"] == both["candidate_cpu"]).mean() > 0.95
    same = both.filter(pl.col("candidate") == pl.col("candidate_cpu"))
    assert (same["fwd_nll"] - same["fwd_nll_cpu"]).abs().max() < 1e-2


@pytest.mark.gpu
def test_gpu_a_batch_out_of_cuda_memory_is_decoded_again_smaller(tiny, shard, tmp_path, monkeypatch):
    """A real CUDA out-of-memory error (torch's allocator asked for more than the card holds)
    halves the batch until the work fits; a decoding job on the card goes on at the smaller
    size and gives what that size gives, the halvings in its provenance."""
    import torch

    from paramill.run import device as dev
    from paramill.nmt import translate

    halved = []
    got, size = dev.fit_gpu_memory(
        lambda n: torch.empty(n << 30, dtype=torch.uint8, device="cuda").numel(), 1 << 14, "gib",
        "test", "start", halved)  # 16 TiB first
    assert size < 1 << 14 and got == size << 30 and halved[0] == {"at": "start", "gib": 1 << 14, "now": 1 << 13}
    real = translate.load_translator

    class Crowded:  # the opennmt-py engine on a card where a batch over 16 sentences fails
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def translate_batch(self, source, **kw):
            if kw["max_batch_size"] > 16:
                torch.empty(1 << 44, dtype=torch.uint8, device="cuda")  # 16 TiB: out of memory
            return self.inner.translate_batch(source, **kw)

    def run(name, batch_size):
        out = tmp_path / f"{name}.parquet"
        translate_shard(shard, tiny["root"] / "ct2", *tiny["spm"], out,
                        TranslateSettings(device="cuda", engine="opennmt-py", beam_size=4, batch_size=batch_size))
        return pl.read_parquet(out), json.loads(out.with_name(out.name + ".prov.json").read_text())

    monkeypatch.setattr(translate, "load_translator", lambda *a, **kw: Crowded(real(*a, **kw)))
    fitted, record = run("fitted", 64)
    assert [h["now"] for h in record["translation"]["out_of_gpu_memory"]] == [32, 16]
    direct, _ = run("direct", 16)
    both = fitted.join(direct, on="candidate_id", suffix="_direct")
    assert record["translation"]["device"] == "cuda" and both.height == fitted.height == direct.height
    assert (both["candidate"] == both["candidate_direct"]).mean() > 0.99


@pytest.mark.gpu
def test_gpu_sampling_fills_costs_ranks_and_clusters(tiny, back, shard, tmp_path):
    from paramill.nmt.sampling import SampleSettings, sample_shard
    from paramill.nmt.score import load_scorer, nll_per_token

    ct2, (cs_spm, en_spm) = tiny["root"] / "ct2", tiny["spm"]
    settings = SampleSettings(device="cuda", samples=10, constraint_sets=3, block=50, threshold=100.0, n=5)
    stats = sample_shard(shard, ct2, back, cs_spm, en_spm, tmp_path / "s.parquet", settings)
    assert stats["engine"]["device"] == "cuda" and stats["output"] > 0
    frame = pl.read_parquet(tmp_path / "s.parquet")
    assert frame["fwd_nll"].null_count() == 0 and frame["bwd_nll"].null_count() == 0
    assert frame["cluster"].null_count() == 0 and frame["constraint_set"].null_count() == 0
    ranks = frame.group_by("pair_id").agg(pl.col("rank").sort())
    assert all(r.to_list() == list(range(1, len(r) + 1)) for r in ranks["rank"])
    # the GPU's dual scores are the CPU's, within float noise
    cs_seg, en_seg = Segmenter(cs_spm), Segmenter(en_spm)
    sources = dict(zip(*pl.read_parquet(shard).select("pair_id", "cs")))
    rows = frame.head(50)
    src = cs_seg.encode([sources[p] for p in rows["pair_id"]])
    hyp = en_seg.encode(rows["candidate"].to_list())
    cpu = nll_per_token(load_scorer(ct2, "cpu"), src, hyp)
    assert max(abs(a - b) for a, b in zip(cpu, rows["fwd_nll"])) < 1e-2


@pytest.mark.gpu
def test_gpu_training_runs_opennmt_steps_on_cuda(tiny, tmp_path):
    # the module's tiny model was trained where this runs: on the GPU here
    assert tiny["summary"]["gpus"] >= 1 and tiny["summary"]["step"] == 60
    summary = train_nmt("cs-en", tiny["root"] / "data", *tiny["spm"], tmp_path / "m.pt",
                        tmp_path / "work", TINY_MODEL, tiny_train(20))
    assert summary["gpus"] >= 1 and summary["step"] == 20 and (tmp_path / "m.pt").stat().st_size
    half = train_nmt("cs-en", tiny["root"] / "data", *tiny["spm"], tmp_path / "h.pt", tmp_path / "half",
                     TINY_MODEL, dataclasses.replace(tiny_train(20), precision="fp16"))
    assert half["step"] == 20 and "model_dtype: fp16" in (tmp_path / "half" / "opennmt.yaml").read_text()


def test_paths_with_both_quotes_and_yaml_syntax_train(tiny, tmp_path):
    """OpenNMT-py re-reads option values as YAML: it sees only plain relative names."""
    import shutil

    odd = tmp_path / "it's \"odd\": [x] #1"
    shutil.copytree(tiny["root"] / "data", odd / "data")
    spm = [shutil.copyfile(p, odd / f"{lang} 'spm\".model") for p, lang in zip(tiny["spm"], ("cs", "en"))]
    summary = train_nmt("cs-en", odd / "data", *spm, odd / "model.pt", odd / "work \"w'",
                        TINY_MODEL, tiny_train(10))
    assert summary["step"] == 10 and (odd / "model.pt").stat().st_size
    cfg = (odd / "work \"w'" / "opennmt.yaml").read_text()
    assert "odd" not in cfg and "inputs/data/train.cs" in cfg


def test_a_model_without_ctranslate2_files_is_checked_by_its_checkpoints_vocabulary(tiny, tmp_path):
    """A folder the opennmt-py engine decodes may hold its OpenNMT-py checkpoint alone: the
    SentencePiece models are checked against the checkpoint's own vocabularies then."""
    import torch

    from paramill.errors import InputError
    from paramill.nmt.checkpoints import CHECKPOINT
    from paramill.nmt.subwords import Segmenter, check_fit, model_vocabulary

    cs_spm, en_spm = tiny["spm"]
    folder = tmp_path / "onmt"
    folder.mkdir()
    (folder / CHECKPOINT).write_bytes((tiny["root"] / "ct2" / CHECKPOINT).read_bytes())
    ct2_source = model_vocabulary(tiny["root"] / "ct2", "source")
    assert model_vocabulary(folder, "source") == ct2_source  # the same tokens, in order
    assert model_vocabulary(folder, "target") == model_vocabulary(tiny["root"] / "ct2", "target")
    assert check_fit(Segmenter(cs_spm), folder, "source") == check_fit(
        Segmenter(cs_spm), tiny["root"] / "ct2", "source") > 0.9
    with pytest.raises(InputError, match=rf"^{en_spm}: a SentencePiece model that does not fit "
                                         rf"the source side of {folder}"):
        check_fit(Segmenter(en_spm), folder, "source")
    # a checkpoint without vocabularies, and a file that is none, are named
    torch.save({"model": {}}, folder / CHECKPOINT)
    with pytest.raises(InputError, match=rf"^{folder / CHECKPOINT}: an OpenNMT-py checkpoint "
                                         "without a target vocabulary"):
        check_fit(Segmenter(en_spm), folder, "target")
    (folder / CHECKPOINT).write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match=rf"^{folder / CHECKPOINT}: "):
        model_vocabulary(folder, "source")
    assert model_vocabulary(tmp_path, "source") is None  # neither: nothing to check


def test_a_translation_job_ends_saying_how_many_outputs_are_distinct():
    from collections import Counter

    from paramill.nmt.translate import distinct_line

    many = Counter({f"sentence {i}": 1 for i in range(19)} | {"It rains.": 1})
    assert distinct_line("nmt translate", many) == (
        "nmt translate: 20 distinct best translations of 20 sources (100.0%); the most "
        "repeated, 1 times: 'It rains.'")
    few = Counter({".": 21, "It rains.": 3, "A dog.": 1})
    line = distinct_line("nmt translate", few)
    assert line.startswith("nmt translate: warning: degenerate translations, 3 distinct of 25 "
                           "(12.0%); the most repeated, 21 times: '.'")
