"""The ``paramill`` command line: the stage packages' ``cli.group`` (:mod:`paramill.commands`),
``provenance`` and ``config``. Errors in the input (a bad file or line, a bad setting) end
with one message naming the file and line or the setting, and exit status 2."""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
from typing import Any

from paramill import __version__
from paramill.run.commands import Group, HelpFormatter, arg, json_of
from paramill.run.signals import on_sigterm

EXIT_INPUT_ERROR = 2
#: the stage packages whose ``cli.group`` is a command group, in the order --help lists them
STAGES = ("bitext", "pairs", "nmt", "filters", "embed", "evaluate", "lexicon", "twitter", "report")

provenance = Group("provenance", "inspect and verify provenance records", docs="provenance.md")


@provenance.verb(
    "verify", "re-hash inputs and outputs; follow the chain",
    arg("paths", nargs="+", help="outputs (not their .prov.json)"),
    arg("--no-recursive", action="store_true", help="check only these records"),
    arg("--outputs-only", action="store_true",
        help="check only that each path is the file (or folder) its record describes, not the "
             "inputs or the chain: for an output shared with its record away from the tree "
             "that made it (a released model)"),
    description="Exit 0 when every recorded input and output still has its recorded sha256, "
                "back to the raw files; 1 otherwise.",
    example='paramill provenance verify results/corpus/default/corpus.tsv')
def verify(args: argparse.Namespace) -> int:
    from paramill.provenance import verify
    broken = 0
    whole = not (args.no_recursive or args.outputs_only)
    for path in args.paths:
        findings = verify(path, recursive=not args.no_recursive, inputs=not args.outputs_only)
        broken += bool(findings)
        print(f"{path}: " + (f"BROKEN ({len(findings)} problem{'s' * (len(findings) != 1)})"
                             if findings else "OK" + " (whole chain)" * whole
                             + " (the output only)" * args.outputs_only))
        print("".join(f"  {finding}\n" for finding in findings), end="")
    return int(broken > 0)


@provenance.verb("show", "print an output's record", arg("path", help="an output"),
    example='paramill provenance show results/bitext/stats.json')
def show(args: argparse.Namespace) -> int:
    from paramill.io.jsonfiles import read_json
    from paramill.provenance import prov_path
    print(json.dumps(read_json(prov_path(args.path)), indent=2, sort_keys=True))
    return 0


formats_group = Group("formats", "the layouts input files are read in: list them, peek at a file", docs="formats.md")


@formats_group.verb("list", "every layout, the uses it is read as, and what it reads",
                    arg("--use", choices=["bitext", "pairs", "sts", "labelled"],
                        help="only the layouts of this use"),
    example='paramill formats list --use pairs')
def formats_list(args: argparse.Namespace) -> int:
    from paramill.peek import layouts
    for layout in layouts(args.use):
        print(f"{layout['format']:<12} {', '.join(layout['uses']) or '-':<28} {layout['description']}")
    return 0


@formats_group.verb(
    "peek", "the first rows of a file as the pipeline reads them (JSON lines), before a run",
    arg("--use", required=True, choices=["bitext", "pairs", "sts", "labelled"],
        help="what the file is: a bitext corpus, a pair corpus, an STS set, labelled pairs"),
    arg("--spec", type=json_of({"type": "object"}, "an object"), required=True, metavar="JSON",
        help="the file's config entry: a corpus's (bitext.corpora.<name>, pairs.corpora.<name>: "
             '{"format": "csv", "path": "train.csv", "fields": {"s1": "question1", ...}}), or '
             'an STS set\'s or labelled data\'s {"format", "path", "fields"}'),
    arg("-n", "--rows", type=int, default=10, help="rows to print (default 10)"),
    arg("--scan", type=int, default=10000,
        help="rows to read for the count of reasons on stderr (default 10000)"),
    description="Prints each row as one JSON object (a row that cannot be read: its reason and "
                "detail, as the rejected table would hold them), then, on stderr, how many of "
                "the rows scanned were read and why the others were not. A wrong `fields` or "
                "`format` is the error the pipeline would give.",
    example='paramill formats peek --use pairs --spec \'{"format": "paranmt", "path": "data/sample/pairs/grammar.paranmt.txt.gz"}\' -n 3')
def formats_peek(args: argparse.Namespace) -> int:
    from paramill.peek import peek
    rows, reasons, scanned = peek(args.use, args.spec, args.rows, args.scan)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    counts = ", ".join(f"{reason} {n}" for reason, n in reasons.most_common())
    print(f"paramill formats peek: {scanned} rows scanned: {counts or 'none'}", file=sys.stderr)
    return 0


configs = Group("config", "validate configs; generate the schema", docs="configuration.md")


@configs.verb("validate", "check a config file; errors name the key",
              arg("file", help="YAML config file"),
    description="Exit status 2 for a config that is not valid; 1 for a valid one that names input "
                "files that are not there (relative to this folder): a run here would stop on them.",
    example='paramill config validate config.yaml')
def validate(args: argparse.Namespace) -> int:
    from paramill import config
    from paramill.config.checks import missing_input_files
    missing = missing_input_files(config.load(args.file))
    if missing:
        print(f"{args.file}: valid, but it names input files that are not there (a run here stops "
              "before any job):\n  " + "\n  ".join(missing), file=sys.stderr)
        return 1
    print(f"{args.file}: valid")
    return 0


@configs.verb(
    "resolve", "print the config with defaults filled in, as JSON",
    arg("file", help="YAML file, or - for JSON on stdin"), arg("--with-digest", action="store_true",
        help='print {"config": ..., "digest": sha256}: the digest provenance records name'),
    example='paramill config resolve configs/paranmt.yaml')
def resolve(args: argparse.Namespace) -> int:
    from paramill import config
    if args.file == "-":
        try:
            given = json.load(sys.stdin)
        except RecursionError:
            raise ValueError("standard input: JSON nested too deeply to read") from None
        resolved = config.resolve(given)
    else:
        resolved = config.load(args.file)
    from paramill.config.layout import unfold

    shown = unfold(resolved)  # as a config file holds it
    print(json.dumps({"config": shown, "digest": config.digest(resolved)} if args.with_digest
                     else shown))
    return 0


@configs.verb(
    "schema", "print the JSON Schema generated from the stages' settings declarations",
    arg("--write", action="store_true", help="write configs/config.schema.yaml (in a checkout)"),
    arg("--docs", action="store_true", help="print the configuration reference (Markdown, the "
        "manual's page) instead"),
    example='paramill config schema --write')
def schema(args: argparse.Namespace) -> int:
    from paramill import schema
    if args.write:
        return "wrote " + ", ".join(map(str, schema.write()))
    print(schema.reference_page() if args.docs else schema.dump(schema.generate()), end="")
    return 0


def groups() -> list[Group]:
    """Every command group, in the order of the data flow, then the tools."""
    return [*(importlib.import_module(f"paramill.{stage}.verbs").group for stage in STAGES),
            provenance, formats_group, configs]


def _listing(found: list[Group]) -> str:
    """The top-level help's list of commands: each group (a pipeline stage, or a tool) and
    under it its verbs, one line each."""
    width = max(len(verb.name) for group in found for verb in group.verbs)
    lines = []
    for group in found:
        lines.append(f"  {group.name:<11}{group.help}")
        lines += [f"      {verb.name:<{width}}  {verb.help}" for verb in group.verbs]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    found = groups()
    parser = argparse.ArgumentParser(
        prog="paramill", formatter_class=HelpFormatter,
        description="Paraphrase corpora from Czech-English bitext and news tweets. Each command "
                    "is one step of a pipeline stage; the Snakemake rules call them, and they "
                    "run on their own too. Every output gets <output>.prov.json beside it.\n\n"
                    "commands, by stage (paramill COMMAND STEP --help for one):\n"
                    + _listing(found),
        epilog="example:\n  paramill formats peek --use bitext --spec "
               "'{\"format\": \"moses\", \"cs\": \"my.cs\", \"en\": \"my.en\"}'\n\n"
               "manual: docs/ (mkdocs serve), starting at docs/index.md; every command: "
               "docs/cli.md")
    parser.add_argument("--version", action="version", version=f"paramill {__version__}")
    parser.add_argument("--rule", help="rule name recorded in provenance (set by the workflow; "
                                       "default: <group>_<verb>)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="threads for everything this command runs: torch, CTranslate2, "
                             "polars, numpy and the tools it starts (the rules pass their "
                             "`threads`; default: the CPUs this process may use)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND STEP",
                                help="one of the commands listed above, and its step")
    for group in found:
        group.add_to(sub)
    return parser


def reference_page() -> str:
    """The command-line reference (docs/cli.md, generated at build time): every verb's
    ``--help``, grouped by stage."""
    import os

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to it: the page is the same on any terminal
    try:
        parser = build_parser()
        lines = ["# Command-line reference", "",
                 "Generated from the command line itself (`paramill COMMAND STEP --help`). The "
                 "Snakemake rules call these commands; each also runs on its own. Every command "
                 "takes the global options `--threads N` (the threads of every pool it "
                 "starts) and `--rule NAME` (the rule its provenance records).", "",
                 "```text", parser.format_help().rstrip(), "```", ""]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for group in groups():
            lines += [f"## {group.name}", "", group.description or group.help, ""]
            verbs = next(a for a in sub.choices[group.name]._actions
                         if isinstance(a, argparse._SubParsersAction))
            for verb in group.verbs:
                lines += [f"### paramill {group.name} {verb.name}", "", "```text",
                          verbs.choices[verb.name].format_help().rstrip(), "```", ""]
        return "\n".join(lines)
    finally:
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The command line's parser, built once a process: building it walks every verb of
    every stage, and argparse asks gettext for each of its messages (a search of the locale
    folders each time), about 35 ms; a process that calls :func:`main` many times (a test
    of every verb, a script) pays it once. Parsing never changes the parser."""
    return build_parser()


def _terminated(signum: int, frame: Any) -> None:
    # SLURM (time limit, scancel) and snakemake stop a job with SIGTERM; as an exception
    # it unwinds like any failure, so temporaries and scratch space are removed
    raise SystemExit(128 + signum)


#: ``--threads`` may ask for up to this many threads a CPU the process may use
MAX_OVERSUBSCRIPTION = 4


def _early_threads(argv: list[str] | None) -> None:
    """Apply ``--threads`` before any stage module (and so polars, numpy, torch) is
    imported: their pools are sized from the environment when they load."""
    from paramill.run import device
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--threads", type=int)
    known, _ = early.parse_known_args(argv)
    if known.threads is not None and known.threads < 1:
        early.error(f"--threads must be at least 1, not {known.threads}")
    cpus = device.available_cpus()
    if known.threads is not None and known.threads > MAX_OVERSUBSCRIPTION * cpus:
        # every pool (torch's two, BLAS, polars, the tools started) would start that many:
        # --threads 100000 started 31,000 threads and 1.5 GB before it was stopped
        early.error(f"--threads {known.threads} is more than {MAX_OVERSUBSCRIPTION} times the "
                    f"{cpus} CPUs this process may use (its affinity: what SLURM or taskset "
                    f"allow); give at most {MAX_OVERSUBSCRIPTION * cpus}")
    device.limit_threads(known.threads or device.threads())


#: the exit status of a job that ran out of memory (a resource to raise, not a bad input)
EXIT_OUT_OF_MEMORY = 3


def out_of_memory(exc: BaseException, keys: tuple[str, ...] = ()) -> str | None:
    """The error line for a job that ran out of host or GPU memory (Python's MemoryError,
    torch's allocators), or None for any other error. What to change comes with it: the job
    holds memory in proportion to its settings (a model's ``dim``, a batch), not to the
    corpus, so the fix is a setting or the rule's ``mem_mb``/GPU, never a smaller input:
    ``keys``, the config keys its verb says size what it holds (each launch-only one said
    to be: changing it re-runs no other job)."""
    from paramill.run import device

    text = " ".join(str(exc).split())
    if getattr(exc, "memory_hint", None):  # a worker process killed (WorkerLost)
        return exc.memory_hint
    if isinstance(exc, MemoryError):
        where = "host memory"
    elif device.gpu_out_of_memory(exc):
        where = "GPU memory"
    elif device.host_out_of_memory(exc):
        where = "host memory"
    else:
        return None
    detail = text.split(". Error code")[0].split(" Of the allocated memory")[0][:240]
    what = "a model's dim, batch_size or megabatch, a buffer"
    if keys:
        from paramill.config import marked
        from paramill.config.layout import as_written

        def said(key: str) -> str:  # named as a config file holds it
            *path, leaf = key.split(".")
            shown = as_written(key)
            return f"{shown} (launch-only: re-runs no other job)" if leaf in marked("launch", *path) else shown

        what = ", ".join(map(said, keys))
    return (f"out of {where}{f' ({detail})' if detail else ''}. Lower the settings that size "
            f"what the job holds at once ({what}), or give the rule more memory (resources: "
            "{RULE: {mem_mb: ...}} or a larger GPU)")


def _error(command: str, message: str) -> None:
    """The one error line, on a line of its own (a progress bar in the log is ended first),
    naming a setting as a config file holds it."""
    from paramill.config.layout import as_written
    from paramill.run.progress import end_all

    end_all()
    print(f"paramill {command}: error: {as_written(message)}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    _early_threads(argv)
    args = _parser().parse_args(argv)
    command = " ".join(filter(None, [args.command, getattr(args, "what", None)]))
    with on_sigterm(_terminated):
        return _run(args, command)


def _run(args: argparse.Namespace, command: str) -> int:
    """The command's function, its failures as one error line and an exit status."""
    from paramill.io.yamlfiles import ConfigError
    from paramill.errors import InputError
    try:
        return args.func(args)
    except (InputError, ConfigError, ValueError) as exc:
        _error(command, str(exc))
        return EXIT_INPUT_ERROR
    except OSError as exc:  # a disk full (ENOSPC), a file that cannot be opened or written
        where = f"{exc.filename}: " if exc.filename else ""
        _error(command, f"{where}{exc.strerror or exc}")
        return EXIT_INPUT_ERROR
    except (MemoryError, RuntimeError) as exc:
        message = out_of_memory(exc, getattr(args, "memory_keys", ()))
        if message is None:
            raise  # a defect: its traceback is what to report
        _error(command, message)
        return EXIT_OUT_OF_MEMORY


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
