import argparse
import gzip
import json

import pytest

from paramill.cli import build_parser, main


def test_help_explains_every_command(capsys):
    parser = build_parser()
    for argv in (["--help"], ["bitext", "ingest", "--help"], ["bitext", "clean", "--help"],
                 ["bitext", "stats", "--help"],
                 ["provenance", "verify", "--help"], ["config", "resolve", "--help"]):
        with pytest.raises(SystemExit) as done:
            parser.parse_args(argv)
        assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Moses pair" in out and "recorded input and output still has its recorded sha256" in out


def test_every_verb_and_every_option_has_help():
    # walk the whole command tree: every group, verb and argument explains itself
    import argparse

    seen = []

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                for name, sub in action.choices.items():
                    # a group's help is in the top-level listing (test_docs.py), a verb's here
                    assert helps.get(name) or not path and sub.description, \
                        f"paramill {' '.join([*path, name])} has no help"
                    walk(sub, [*path, name])
            elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                assert action.help, f"paramill {' '.join(path)} {action.dest} has no help"
        seen.append(path)

    walk(build_parser(), [])
    verbs = [p for p in seen if len(p) == 2]
    assert len(verbs) >= 30 and ["filters", "score"] in verbs and ["config", "schema"] in verbs


def test_settings_are_config_sections_with_the_schemas_defaults(tmp_path):
    # no verb redeclares a setting: --settings takes the section, the schema fills the rest
    from paramill.run.commands import section_settings

    args = build_parser().parse_args(["nmt", "data", "x.parquet", "--out", "o",
                                      "--settings", '{"valid_size": 5}'])
    assert not hasattr(args, "valid_size") and not hasattr(args, "seed")
    filled = section_settings("nmt", args.settings)
    assert filled["valid_size"] == 5 and filled["seed"] == 13


def test_launch_takes_only_launch_only_keys_over_the_settings(tmp_path, capsys):
    # how a job runs comes apart from what it computes: the workflow passes it in --launch,
    # outside the rule's params; a key that changes the output is refused there
    from paramill.run.commands import launch_overlays, section_settings

    args = build_parser().parse_args(["embed", "train", "p.tsv", "--out", "m.pt", "--settings",
                                      '{"epochs": 2, "cuda_graph": true}',
                                      "--launch", '{"embed.train": {"cuda_graph": false}}'])
    overlay = launch_overlays(args.launch, ["embed.train", "embed.model"])["embed.train"]
    filled = section_settings("embed.train", args.settings, overlay)
    assert filled["cuda_graph"] is False and filled["epochs"] == 2
    assert filled["recurrent_cuda_graph"] is False  # the schema's default
    with pytest.raises(ValueError, match=r"only embed.train's launch-only keys \(cuda_graph, "
                                         r"recurrent_cuda_graph, checkpoint_minutes\), not epochs"):
        launch_overlays({"embed.train": {"epochs": 3, "cuda_graph": False}}, ["embed.train"])
    with pytest.raises(ValueError, match="names section lexicon, which this step does not read"):
        launch_overlays({"lexicon": {"partitions": 3}}, ["embed.train", "embed.model"])
    with pytest.raises(ValueError, match="an object of config sections"):
        launch_overlays({"cuda_graph": False}, ["embed.train"])
    # a step of two sections takes each one's keys (clean reads the ingest settings too)
    both = launch_overlays({"bitext.clean": {"bucket_rows": 1000}, "bitext.ingest": {"batch_rows": 5}},
                           ["bitext.clean", "bitext.ingest"])
    assert section_settings("bitext.ingest", {"shard_size": 9}, both["bitext.ingest"])["batch_rows"] == 5

    (tmp_path / "p.tsv").write_text("a man reads\ta man is reading\nthe dog runs\ta dog runs\n")
    assert main(["embed", "train", str(tmp_path / "p.tsv"), "--out", str(tmp_path / "m.pt"),
                 "--spec", '{"components": ["word"], "units": "word", "dim": 8}',
                 "--settings", '{"epochs": 1, "cuda_graph": true}',
                 "--launch", '{"embed.train": {"cuda_graph": false}}']) == 0
    record = json.loads((tmp_path / "m.pt.prov.json").read_text())
    assert record["params"]["train"]["cuda_graph"] is False  # the job's record holds it
    assert record["params"]["train"]["epochs"] == 1
    capsys.readouterr()
    assert main(["embed", "train", "p.tsv", "--out", "m.pt", "--launch",
                 '{"embed.train": {"seed": 1}}']) == 2
    assert "--launch takes only embed.train's launch-only keys" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # only a verb whose sections have launch-only keys takes it
        build_parser().parse_args(["nmt", "data", "x.parquet", "--out", "o", "--launch", "{}"])
    assert "unrecognized arguments: --launch" in capsys.readouterr().err


def test_ingest_bad_file_exits_2_naming_file_and_line(tmp_path, capsys):
    src = tmp_path / "c.tsv.gz"
    src.write_bytes(gzip.compress(b"".join(b"1\t1\tradek\tline %d\n" % i for i in range(20000)))[:-50])
    code = main(["bitext", "ingest", "--corpus", "c", "--spec", json.dumps({"format": "czeng1", "path": str(src)}),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{src}:" in err and "truncated or corrupt" in err
    assert not (tmp_path / "out").exists()


def test_ingest_then_clean_then_stats_from_the_command_line(tmp_path, capsys):
    cs, en = tmp_path / "a.cs", tmp_path / "a.en"
    cs.write_text("Ahoj.\nAhoj.\n\nPes.\n")
    en.write_text("Hello.\nHello.\nEmpty.\nDog.\n")
    assert main(["--rule", "ingest", "bitext", "ingest", "--corpus", "a", "--spec",
                 json.dumps({"format": "moses", "cs": str(cs), "en": str(en)}), "--out", str(tmp_path / "in"),
                 "--settings", '{"shard_size": 2}']) == 0
    assert main(["bitext", "clean", "--corpus", "a", "--ingested", str(tmp_path / "in"),
                 "--shards", str(tmp_path / "sh"), "--rejected", str(tmp_path / "r.parquet"),
                 "--keys", str(tmp_path / "k.parquet"), "--stats", str(tmp_path / "s.json"),
                 "--settings", '{"min_tokens": 1}']) == 0
    assert main(["bitext", "stats", str(tmp_path / "s.json"), "--json", str(tmp_path / "t.json"),
                 "--tsv", str(tmp_path / "t.tsv")]) == 0
    total = json.loads((tmp_path / "t.json").read_text())
    assert total["rows_in"] == 4 and total["kept"] == 2
    assert total["rejected"] == {"duplicate": 1, "empty_cs": 1}
    assert main(["provenance", "verify", str(tmp_path / "t.json")]) == 0
    assert "OK (whole chain)" in capsys.readouterr().out
    shard = sorted((tmp_path / "in").glob("*.parquet"))[0]
    shard.write_bytes(shard.read_bytes() + b"\0")  # an intermediate edited since its step wrote it
    assert main(["bitext", "clean", "--corpus", "a", "--ingested", str(tmp_path / "in"),
                 "--shards", str(tmp_path / "sh2"), "--rejected", str(tmp_path / "r2.parquet"),
                 "--keys", str(tmp_path / "k2.parquet"), "--stats", str(tmp_path / "s2.json"),
                 "--settings", '{"min_tokens": 1}']) == 2
    err = capsys.readouterr().err
    assert f"{shard}: changed since `ingest` wrote it" in err and "Traceback" not in err
    assert not list(tmp_path.glob("*2*"))  # nothing written
    cs.write_text("changed\n")
    assert main(["provenance", "verify", str(tmp_path / "t.json")]) == 1
    assert f"{cs}: input changed" in capsys.readouterr().out


def test_settings_on_the_command_line_are_checked_as_a_config_is(tmp_path, capsys):
    """`pairs ingest --clean '{"min_tokens":50,"max_tokens":10}'` ran to an empty result and
    exit 0: every verb's settings go through the config's own checks (bounds, types and the
    constraints between keys), before any work, naming the key; a job of the workflow
    (--rule), whose config was checked whole, skips the schema's pass only."""
    from paramill import config
    from paramill.io.yamlfiles import ConfigError

    pairs = tmp_path / "p.txt"
    pairs.write_text("He left .\tHe went away .\t0.8\n")
    base = ["pairs", "ingest", "--corpus", "c", "--spec", json.dumps({"format": "paranmt", "path": str(pairs)}),
            "--out", str(tmp_path / "o")]
    for clean, said in (({"min_tokens": 50, "max_tokens": 10},
                         "config keys pairs.clean.min_tokens (50) and pairs.clean.max_tokens (10)"),
                        ({"min_tokens": -1}, "settings pairs.clean.min_tokens: -1 is less than the minimum of 1"),
                        ({"max_tokens": "many"}, "settings pairs.clean.max_tokens: 'many' is not of type")):
        for rule in ([], ["--rule", "pairs_ingest"]):
            status = main([*rule, *base, "--clean", json.dumps(clean)])
            err = capsys.readouterr().err
            if rule and "settings pairs" in said:
                continue  # the workflow checked its config: the settings class reads what is left
            assert status == 2 and f"paramill pairs ingest: error: invalid settings for pairs.clean:\n  {said}" in err
            assert not (tmp_path / "o").exists()
    assert main([*base, "--clean", '{"min_tokens": "2"}']) == 0  # as --config's strings are read
    # a section alone names other sections' entries it cannot see: those are checked with the config
    assert config.check_section("filters.heldout", {"corpora": ["grammar"]})["corpora"] == ["grammar"]
    # every section a verb reads: a bound broken is refused, the value as the config reads it kept
    schema = config.schema()
    for path in [("bitext", "clean"), ("nmt", "train"), ("embed", "train"), ("lexicon",), ("filters", "select")]:
        node = schema
        for part in path:
            node = node["properties"][part]
        key, spec = next((k, v) for k, v in node["properties"].items() if "minimum" in v)
        with pytest.raises(ConfigError, match=rf"settings {'.'.join(path)}.{key}: .* less than the minimum"):
            config.check_section(".".join(path), {key: spec["minimum"] - 1})
        assert config.check_section(".".join(path), {key: str(spec["minimum"])})[key] == spec["minimum"]


def test_config_validate_names_the_bad_key(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("bitext:\n  clean:\n    max_tokens: -3\n")
    assert main(["config", "validate", str(bad)]) == 2
    assert "config key bitext.clean.max_tokens: -3 is less than the minimum of 1" in capsys.readouterr().err
    # a learning rate past float32 was torch's overflow traceback in the identifier's fine-tuning
    for section, key in (("embed:\n  train", "learning_rate"), ("nmt:\n  train", "learning_rate"),
                         ("twitter:\n  advanced:\n    identify", "finetune_lr"),
                         ("twitter:\n  advanced:\n    identify", "distill_lr")):
        indent = " " * (2 * section.count("\n") + 2)
        bad.write_text(f"{section}:\n{indent}{key}: 1.0e+300\n")
        assert main(["config", "validate", str(bad)]) == 2
        assert f".{key}: 1e+300 is greater than the maximum of 1000" in capsys.readouterr().err
    # valid, but a file it names is not there: a run would stop on it
    bad.write_text(f"lexicon:\n  simlex: {tmp_path / 'SimLex.txt'}\n")
    assert main(["config", "validate", str(bad)]) == 1
    assert f"config key lexicon.simlex: {tmp_path / 'SimLex.txt'} is not there" in capsys.readouterr().err
    (tmp_path / "SimLex.txt").write_text("word1\tword2\n")
    assert main(["config", "validate", str(bad)]) == 0


def test_bad_settings_json_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as done:
        main(["bitext", "ingest", "--corpus", "a", "--spec", '{"format": "tsv", "path": "x"}', "--out", "o",
              "--settings", "{not json"])
    assert done.value.code == 2
    assert "not valid JSON" in capsys.readouterr().err


def _paramill(*args, cwd=None, env=None):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "paramill.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env={**os.environ, **(env or {})})


@pytest.mark.timeout(300)
def test_unusable_inputs_are_one_line_and_exit_2_never_a_traceback_or_a_hang(tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    cases = {str(tmp_path / "adir"): "is a directory", str(tmp_path / "loop"): "cannot be read",
             "/dev/zero": "not a regular file"}
    for path, message in cases.items():
        proc = _paramill("bitext", "ingest", "--corpus", "c", "--spec", json.dumps({"format": "czeng1", "path": path}),
                         "--out", str(tmp_path / "out"))
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert lines[0].startswith(f"paramill bitext ingest: error: {path}: ") and message in lines[0]
        assert not (tmp_path / "out").exists()
    (tmp_path / "x.prov.json").write_text("{broken")
    (tmp_path / "x").write_text("x")
    proc = _paramill("provenance", "show", str(tmp_path / "x"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_full_disk_is_one_line_exit_2_and_nothing_half_written(tmp_path, capsys, monkeypatch):
    import errno

    import pyarrow.parquet as pq

    src = tmp_path / "c.tsv"
    src.write_text("".join(f"{i}\t1\tradek {i}\tline {i}\n" for i in range(50)))
    real = pq.ParquetWriter.write_table
    calls = {"n": 0}

    def full(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out"))
        return real(self, *a, **k)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    monkeypatch.setenv("PARAMILL_PROGRESS", "0")
    code = main(["bitext", "ingest", "--corpus", "c", "--spec", json.dumps({"format": "czeng1", "path": str(src)}),
                 "--out", str(tmp_path / "out"), "--settings", '{"shard_size": 10}'])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"paramill bitext ingest: error: {tmp_path / 'out'}: No space left on device"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.tsv"]


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_size_every_pool_before_the_libraries_load_and_the_record_says_so(tmp_path, threads):
    """`paramill --threads N` (what every rule passes) is what polars, torch and the tools
    the command starts use, whatever the machine has; the provenance record shows it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    cs, en = tmp_path / "a.cs", tmp_path / "a.en"
    cs.write_text("Ahoj.\nPes.\n")
    en.write_text("Hello.\nDog.\n")
    tool = Path(sys.executable).parent / "paramill"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_THREADS")}
    subprocess.run([str(tool), "--threads", str(threads), "bitext", "ingest", "--corpus", "a",
                    "--spec", json.dumps({"format": "moses", "cs": str(cs), "en": str(en)}),
                    "--out", str(tmp_path / "in")], check=True, env=env, capture_output=True)
    record = json.loads(next((tmp_path / "in").parent.glob("in*.prov.json")).read_text())
    assert record["threads"] == {"given": threads, "polars": threads}
    probe = ("import sys; from paramill import cli; from paramill.run import device; cli._early_threads(sys.argv[1:]); "
             "import os, polars, torch, subprocess; print(polars.thread_pool_size(), "
             "torch.get_num_threads(), device.threads(), os.environ['OMP_NUM_THREADS'], "
             "subprocess.run([sys.executable, '-c', 'import torch; print(torch.get_num_threads())'], "
             "capture_output=True, text=True).stdout.strip())")
    out = subprocess.run([sys.executable, "-c", probe, "--threads", str(threads)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(threads)] * 5  # polars, torch, CTranslate2's count, a child's torch


def test_threads_below_one_or_far_above_the_cpus_is_a_usage_error(capsys):
    """--threads 100000 started 31,000 threads (every pool sized to it) and 1.5 GB before
    anything ran; more than four threads a CPU the process may use is refused at once."""
    import os

    with pytest.raises(SystemExit) as stop:
        main(["--threads", "0", "config", "schema"])
    assert stop.value.code == 2 and "--threads must be at least 1" in capsys.readouterr().err
    cpus = len(os.sched_getaffinity(0))
    with pytest.raises(SystemExit) as stop:
        main(["--threads", str(4 * cpus + 1), "config", "schema"])
    assert stop.value.code == 2 and (f"--threads {4 * cpus + 1} is more than 4 times the {cpus} CPUs "
                                     f"this process may use") in capsys.readouterr().err


def test_an_error_starts_its_own_line_after_a_progress_bar(tmp_path, capfd, monkeypatch):
    """A job log holds the bar's unterminated line; the error must still begin a line, so
    `grep ^paramill` finds it."""
    import gzip

    monkeypatch.setenv("PARAMILL_PROGRESS", "1")
    lines = "".join(f"{i}\t0.9\tVěta číslo {i}.\tSentence number {i}.\n" for i in range(20000))
    whole = gzip.compress(lines.encode(), mtime=0)
    src = tmp_path / "cut.tsv.gz"
    src.write_bytes(whole[: len(whole) // 2])  # cut in the middle of the stream
    code = main(["bitext", "ingest", "--corpus", "c", "--spec",
                 json.dumps({"format": "czeng1", "path": str(src)}), "--out", str(tmp_path / "o")])
    err = capfd.readouterr().err
    assert code == 2
    assert "ingest c" in err or "lines" in err  # the bar was drawn before the failure
    errors = [line for line in err.split("\n") if "error:" in line]
    assert errors and all(line.startswith("paramill bitext ingest: error:") for line in errors), errors


def test_a_jobs_fixed_costs_stay_small():
    """What every job pays before its work: deterministic torch without importing the
    inductor compiler (2.4 s a job in torch 2.13) and without filling every allocation
    inside an operation first (a kernel each on a GPU), and the config schema read by libyaml
    where PyYAML has it (0.8 s with the pure-Python loader). In a fresh interpreter."""
    import subprocess
    import sys

    probe = (
        "import sys, yaml\n"
        "from paramill import config\nfrom paramill.run import device\n"
        "import torch\n"
        "assert not torch.are_deterministic_algorithms_enabled()\n"
        "device.deterministic()\n"
        "assert torch.are_deterministic_algorithms_enabled()\n"
        "assert torch.is_deterministic_algorithms_warn_only_enabled()\n"
        "assert 'torch._inductor.config' not in sys.modules, 'the inductor was imported'\n"
        "import torch.utils.deterministic as fill\n"
        "assert not fill.fill_uninitialized_memory  # a kernel an allocation, for nothing\n"
        "assert config.SAFE_LOADER is getattr(yaml, 'CSafeLoader', yaml.SafeLoader)\n"
        "assert config.user_schema() == yaml.safe_load(open(config.resources.files('paramill')"
        ".joinpath('data/config.schema.yaml')))\n"
        "import torch._inductor.config as inductor\n"
        "inductor.deterministic = False\n"
        "device.deterministic()\n"
        "assert inductor.deterministic  # where it was imported, its flag is set too\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


def test_running_out_of_memory_is_one_error_line_saying_what_to_change(tmp_path, capsys, monkeypatch):
    """A job that runs out of host or GPU memory (`embed train` with dim 1e9 asked torch for
    704 GB) ended in a torch traceback; it is one error line naming what holds memory and
    the rule's resources, exit status 3 (a resource, not a bad input). Any other
    RuntimeError is a defect and keeps its traceback."""
    import torch

    import paramill.embed.train as training

    pairs = tmp_path / "p.tsv"
    pairs.write_text("a man reads\ta man is reading\n")
    argv = ["embed", "train", str(pairs), "--out", str(tmp_path / "m.pt")]

    def raises(exc):
        def run(*args, **kwargs):
            raise exc
        return run

    cpu = RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
                       "allocate memory: you tried to allocate 704000000000 bytes. Error code 12 "
                       "(Cannot allocate memory)")
    gpu = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                                      "total capacity of 79.19 GiB of which 1.1 GiB is free. Of the "
                                      "allocated memory 70 GiB is allocated by PyTorch")
    for exc, where, detail in ((MemoryError(), "host memory", ""),
                               (cpu, "host memory", "you tried to allocate 704000000000 bytes)"),
                               (gpu, "GPU memory", "1.1 GiB is free.)")):
        monkeypatch.setattr(training, "train", raises(exc))
        assert main(argv) == 3
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith(f"paramill embed train: error: out of {where}") and detail in line
        assert ("(embed.model.dim, embed.train.batch_size, embed.train.megabatch, "
                "embed.advanced.train.buffer_pairs, embed.advanced.train.max_chars)") in line and "mem_mb" in line
    monkeypatch.setattr(training, "train", raises(RuntimeError("index out of range in self")))
    with pytest.raises(RuntimeError, match="index out of range"):
        main(argv)
    assert not list(tmp_path.glob("m.pt*"))
    # a step whose memory is bounded by launch-only keys says so: lowering one re-runs no other job
    import paramill.bitext.ingest as ingesting

    monkeypatch.setattr(ingesting, "ingest", raises(MemoryError()))
    assert main(["bitext", "ingest", "--corpus", "c", "--spec", json.dumps({"format": "czeng1", "path": str(pairs)}),
                 "--out", str(tmp_path / "in")]) == 3
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert ("out of host memory. Lower the settings that size what the job holds at once "
            "(bitext.advanced.ingest.batch_rows (launch-only: re-runs no other job)), or give the rule more "
            "memory") in line
    # CTranslate2 says it in its own words (CUDA_CHECK, CUBLAS_CHECK): a decoding batch to lower
    import pyarrow.parquet as pq

    import paramill.nmt.translate as translating
    from paramill.bitext.tables import BITEXT

    shard = tmp_path / "shard.parquet"
    pq.write_table(BITEXT.empty_table(), shard)
    for said, where in (("CUDA failed with error out of memory", "GPU"),
                        ("cuBLAS failed with status CUBLAS_STATUS_ALLOC_FAILED", "GPU"),
                        ("mkl_malloc: failed to allocate memory", "host")):  # CTranslate2 on the CPU
        monkeypatch.setattr(translating, "translate_shard", raises(RuntimeError(said)))
        assert main(["nmt", "translate", "--shard", str(shard), "--model", str(tmp_path),
                     "--src-spm", str(pairs), "--tgt-spm", str(pairs), "--out", str(tmp_path / "c.parquet")]) == 3
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith(f"paramill nmt translate: error: out of {where} memory ({said})") and (
            "(nmt.advanced.translate.batch_size, nmt.advanced.translate.batch_type, nmt.translate.beam_size, "
            "nmt.advanced.sample.block, nmt.advanced.sample.batch_size)") in line
    monkeypatch.setattr(translating, "translate_shard", raises(RuntimeError("CUDA failed with error invalid argument")))
    with pytest.raises(RuntimeError, match="invalid argument"):
        main(["nmt", "translate", "--shard", str(shard), "--model", str(tmp_path), "--src-spm", str(pairs),
              "--tgt-spm", str(pairs), "--out", str(tmp_path / "c.parquet")])


def test_the_memory_keys_a_step_names_are_config_keys():
    from paramill import config

    def verbs(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield sub
                    yield from verbs(sub)

    named = {key for p in verbs(build_parser()) for key in p.get_default("memory_keys") or ()}
    assert len(named) >= 10
    for key in named:
        *path, leaf = key.split(".")
        assert leaf in config.defaults(*path), key


def test_a_featurising_worker_killed_is_one_error_line_saying_what_to_change(capsys, monkeypatch):
    """A featurising worker process killed (SIGKILL: on a cluster, the job's memory limit) made
    ``embed train`` end in concurrent.futures' BrokenProcessPool traceback; the pool's error
    (:mod:`paramill.pools`, also around diverse sampling's pool)
    now says how the worker ended, and the command line turns a killed one into the one
    error line and exit status 3 of memory. A crash (SIGSEGV) stays a defect's traceback."""
    from paramill.embed.featurise import ordered_map
    from paramill.run.pools import WorkerLost

    from . import workers

    chunks = [([str(k)] * (k + 1),) for k in range(6)]
    with pytest.raises(WorkerLost, match=r"killed \(signal SIGKILL\).*mem_mb") as lost:
        list(ordered_map(workers.killed_at_third, chunks, workers=2))
    assert -9 in lost.value.codes
    with pytest.raises(WorkerLost, match=r"ended abruptly \(.*signal SIGSEGV") as crashed:
        list(ordered_map(workers.crashed_at_third, chunks, workers=2))
    assert crashed.value.memory_hint is None
    import paramill.embed.train as training

    def train(*args, **kwargs):
        raise lost.value

    monkeypatch.setattr(training, "train", train)
    assert main(["embed", "train", "p.tsv", "--out", "m.pt"]) == 3
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("paramill embed train: error: a worker process was killed (signal "
                           "SIGKILL) while the training pairs were featurised")


def _verbs():
    """(group, verb, subparser) of every verb declared through a Group (those with outputs
    the command line checks)."""
    import argparse

    found = []
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for group, sub in action.choices.items():
                for inner in sub._actions:
                    if isinstance(inner, argparse._SubParsersAction):
                        found += [(group, verb, p) for verb, p in inner.choices.items()]
    return found


#: options that name where a command writes, whatever their help says
WRITTEN = {"out", "out_dir", "json", "png", "html", "report", "pairs", "resume", "glance", "pages",
           "paranmt", "rejected", "keys", "shards", "neighbours", "parquet"}


def test_every_option_that_names_an_output_is_declared_as_one():
    """What the check below covers is what is declared with `out(...)`: an output path
    declared as a plain option would be written unchecked, after the work."""
    outputs = 0
    for group, verb, parser in _verbs():
        declared = set(parser.get_default("output_dests") or ())
        for action in parser._actions:
            if not action.option_strings and action.dest != "out":
                continue
            says_output = (action.help or "").lower().startswith("output")
            if says_output or action.dest in WRITTEN:
                assert action.dest in declared, f"paramill {group} {verb}: {action.dest} is not out(...)"
        outputs += len(declared)
    assert outputs >= 50  # every verb's outputs, not an empty walk


def _argv_with(parser, bad: str | None, tmp_path, given: dict | None = None):
    """A command line for the verb with output ``bad`` under a regular file, the other
    outputs writable, the values ``given`` by dest, every other required value a placeholder
    (inputs that do not exist)."""
    import argparse

    from paramill.run.commands import json_arg

    argv = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        outputs = parser.get_default("output_dests")
        if action.dest in (given or {}):
            value = given[action.dest]
        elif action.dest == bad:
            value = str(tmp_path / "a-file" / f"{bad}.out")
        elif action.dest in outputs:
            value = str(tmp_path / "ok" / f"{action.dest}.out")
        elif action.required or (not action.option_strings and action.nargs not in ("?", "*")):
            shape = getattr(action.type, "shape", None)  # commands.json_of
            value = (action.choices[0] if action.choices else "{}" if action.type is json_arg
                     else ("[]" if shape["type"] == "array" else "{}") if shape
                     else "1" if action.type is int else str(tmp_path / "missing-input"))
        else:
            continue
        argv += [action.option_strings[0], value] if action.option_strings else [value]
    return argv


def test_an_output_that_cannot_be_written_stops_the_command_before_its_work(tmp_path, capsys):
    """Each verb, each of its outputs in turn under a file (so its folder cannot be made):
    exit 2 with one line naming that output, before any input is read (the inputs given do
    not exist, and no error names them), and nothing written."""
    (tmp_path / "a-file").write_text("a file, not a folder\n")
    checked = 0
    for group, verb, parser in _verbs():
        for bad in parser.get_default("output_dests"):
            code = main([group, verb, *_argv_with(parser, bad, tmp_path)])
            err = capsys.readouterr().err.strip().splitlines()
            where = f"paramill {group} {verb} --{bad}"
            assert code == 2, where
            assert err[-1].startswith(f"paramill {group} {verb}: error: {tmp_path / 'a-file'}/"), (where, err)
            assert "a-file is a file, not a folder" in err[-1], where
            checked += 1
    assert checked >= 50
    # the writable outputs' folders were made for the check, and removed with the failure
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_command_that_fails_on_its_input_leaves_no_output_folder(tmp_path, capsys):
    """Each verb, its outputs in folders that do not exist yet, its inputs missing: it fails
    (exit 2), and the folders the output check made for it are gone again, while a folder
    that was there before stays. Before, ``pairs stats --json new/a/s.json ...`` on a
    missing corpus left ``new/a`` behind."""
    failed = 0
    for group, verb, parser in _verbs():
        outputs = parser.get_default("output_dests")
        if not outputs:
            continue
        given = {dest: str(tmp_path / "kept" / "new" / dest / f"{dest}.out") for dest in outputs}
        (tmp_path / "kept").mkdir()
        code = main([group, verb, *_argv_with(parser, None, tmp_path, given)])
        capsys.readouterr()
        where = f"paramill {group} {verb}"
        assert code == 2, where
        assert [p.name for p in (tmp_path / "kept").iterdir()] == [], where
        (tmp_path / "kept").rmdir()
        failed += 1
    assert failed >= 30


def test_a_verbs_json_of_another_shape_is_a_usage_error_never_a_traceback(tmp_path, capsys):
    """The JSON options the rules pass besides --settings (STS datasets, sweep points, a
    filter's models, a release's sources) were read as given: a list for an object, a number
    for a path ended in TypeError/AttributeError/KeyError tracebacks, and a dataset without
    a path in a KeyError. Each of 15 wrong JSON values, at the top and one level down, is a
    usage error (exit 2) naming the option, or an error line naming the setting."""
    from tests.hostile import WRONG_JSON

    missing = str(tmp_path / "missing")
    options = {  # the option, a good value, the rest of the command line
        ("evaluate", "sts", "--datasets"): ([{"name": "s", "year": 2012, "format": "tsv", "path": missing}],
                                           ["--model", missing, "--tsv", str(tmp_path / "o.tsv"),
                                            "--json", str(tmp_path / "o.json")]),
        ("evaluate", "sweep", "--points"): ({"word": {"dim": 300}}, [missing, "--out", str(tmp_path / "o.tsv")]),
        ("filters", "score", "--models"): ({"model": missing}, ["--filter", "parascore", "--candidates", missing,
                                                               "--out", str(tmp_path / "o.parquet")]),
        ("filters", "analyse", "--sources"): ({"corpora": {"c": {"format": "moses"}}},
                                             ["--candidates", missing, "--corpus", missing, "--summary", missing,
                                              "--out-dir", str(tmp_path / "an")]),
    }
    tried = 0
    for (group, verb, option), (good, rest) in options.items():
        inner = (lambda v: [v]) if isinstance(good, list) else (lambda v: {next(iter(good)): v})
        for value in [*WRONG_JSON, *map(inner, WRONG_JSON), [{"name": "s"}]]:
            try:
                code = main([group, verb, option, json.dumps(value), *rest])
            except SystemExit as exc:  # argparse: a usage error
                code = exc.code
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2, (option, value, err)
            assert err[-1].startswith(f"paramill {group} {verb}: error: "), (option, value, err)
            tried += 1
    assert tried == 4 * 31


def test_a_score_jobs_token_table_or_bitext_shard_of_another_kind_is_refused(tmp_path, capsys):
    """`filters score --models` names two tables besides the filter's models: the shard's
    token table and, for a filter that reads Czech, its bitext shard. Another Parquet file
    given as the token table (the candidate table itself) ended in polars' ShapeError mid-job,
    and as the bitext shard in ColumnNotFoundError; each is an error naming the file and
    what it should be, before the filter's model loads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.nmt.tables import CANDIDATES

    candidates = tmp_path / "candidates.parquet"
    pq.write_table(pa.Table.from_pylist([{"pair_id": "c-1", "candidate_id": "c-1:beam:1", "en_ref": "a b",
                                          "candidate": "a c", "method": "beam", "rank": 1}], schema=CANDIDATES),
                   candidates)
    base = ["filters", "score", "--candidates", str(candidates), "--out", str(tmp_path / "o.parquet")]
    models = {"cs_en": "x", "en_cs": "x", "cs_spm": "x", "en_spm": "x"}
    for argv, says in (
            ([*base, "--filter", "overlap", "--models", json.dumps({"tokens": str(candidates)})],
             "not a token table (`paramill filters tokens`): no column length_ref"),
            ([*base, "--filter", "dual_xent", "--models", json.dumps({**models, "source": str(candidates)})],
             "not a bitext shard (`paramill bitext clean`): no column cs")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith(f"paramill filters score: error: {candidates}: {says}"), err
    assert not (tmp_path / "o.parquet").exists()


def test_a_parquet_table_of_another_kind_is_refused_before_the_verb_runs(tmp_path, capsys):
    """A candidate table or bitext shard argument given another Parquet file (another
    stage's table, a user's own) ended in polars' ColumnNotFoundError or an IndexError in
    the middle of the job, naming no file, and `nmt data` said "the shards are empty".
    Every verb's table arguments are checked from the files' footers first."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), other)
    named = {"candidates": "not a candidate table", "bitext": "not a bitext shard",
             "heldout": "not a held-out table"}
    import importlib

    from paramill.io.tableread import TABLE_KINDS

    good = {}  # an empty table of each kind, for a verb's other table arguments
    for kind, (module, name, _, _) in TABLE_KINDS.items():
        good[kind] = str(tmp_path / f"{kind}.parquet")
        pq.write_table(getattr(importlib.import_module(module), name).empty_table(), good[kind])
    checked = set()
    for group, verb, parser in _verbs():
        tables = parser.get_default("table_dests")
        for dest, kind in tables.items():
            given = {d: good[k] for d, k in tables.items() if d != dest}
            code = main([group, verb, *_argv_with(parser, None, tmp_path, {**given, dest: str(other)})])
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2, (group, verb, err)
            assert err[-1].startswith(f"paramill {group} {verb}: error: {other}: {named[kind]} (`"), err
            assert err[-1].endswith("): no column pair_id (it has x)"), err
            checked.add(f"{group} {verb}")
    assert checked == {"nmt diversity", "nmt stats", "nmt data", "nmt spm", "nmt translate",
                       "filters heldout", "filters score", "filters tokens", "filters select",
                       "filters analyse", "filters by-method", "filters kenlm", "filters classifier"}
