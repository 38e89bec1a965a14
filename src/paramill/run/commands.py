"""Building blocks of the command line. Each stage package's ``verbs.py`` declares its verbs
on a :class:`Group`; :mod:`paramill.cli` assembles the groups.

A verb's settings are one config section passed as JSON (``--settings``), filled with the
schema's defaults before the verb runs: the command line never redeclares a setting. The
section's launch-only keys (``x-launch``: how the job runs, not what it computes) may come
apart in ``--launch``, which a rule passes outside its params so that changing one re-runs
nothing."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any


#: a verb returns its exit status, or a one-line summary printed to stderr (status 0)
Verb = Callable[[argparse.Namespace], "int | str"]


def json_arg(value: str) -> Any:
    """A JSON value given inline, or ``@path`` to a JSON or YAML file."""
    from paramill.io.yamlfiles import ConfigError, read_yaml

    try:
        if value.startswith("@"):
            return read_yaml(value[1:])
        return json.loads(value, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {value[:80]!r}") from None
    except RecursionError:
        raise argparse.ArgumentTypeError(f"not valid JSON (nested too deeply): {value[:80]!r}") from None
    except (ConfigError, OSError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def json_of(shape: dict[str, Any], what: str) -> Callable[[str], Any]:
    """An option's type: :func:`json_arg`, checked against the JSON Schema ``shape`` (a value
    of another shape is a usage error naming the field, where it was a traceback in the job)."""
    def parse(value: str) -> Any:
        from paramill.io.jsonfiles import problem

        data = json_arg(value)
        wrong = problem(data, shape)
        if wrong:
            raise argparse.ArgumentTypeError(f"not {what}: {wrong}")
        return data
    parse.shape = shape  # type: ignore[attr-defined]
    return parse


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (JSON keeps the last silently), as the
    config's YAML does."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise argparse.ArgumentTypeError(f"the key {key!r} is given twice in one object; "
                                             "JSON would keep the second silently")
        found[key] = value
    return found


def arg(*flags: str, **kw: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """One argument of a verb, as for ``ArgumentParser.add_argument``; ``table=KIND``
    (:data:`paramill.tables.TABLE_KINDS`) checks before the verb runs that each file given
    holds that table's columns, so another Parquet file is one line naming the file and the
    column, not a polars traceback in the middle of the job."""
    return flags, kw


def need(flag: str, help: str, **kw: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """A required option."""
    return arg(flag, required=True, help=help, **kw)


def out(flag: str, help: str, required: bool = True, **kw: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """An output path (``--out``, ``--tsv``, ...; an option is required unless told, a
    positional always is). Before the verb runs, its folder is made and a file created there
    and removed (:func:`paramill.io.check_writable`), so a job that cannot write its output
    stops with one line naming it before its work, not after hours of it."""
    if flag.startswith("-"):
        kw["required"] = required
    return arg(flag, help=help, output=True, **kw)


def section_settings(section: str, given: dict[str, Any] | None,
                     launch: dict[str, Any] | None = None) -> dict[str, Any]:
    """The schema's defaults of config section ``section`` (``"bitext.clean"``) overlaid
    with ``given``, then with ``launch`` (its launch-only keys, :func:`launch_overlays`);
    unknown keys are refused by the settings class that reads them."""
    from paramill import config

    return {**config.defaults(*section.split(".")), **(given or {}), **(launch or {})}


def launch_overlays(launch: Any, sections: list[str]) -> dict[str, dict[str, Any]]:
    """``--launch``'s object, {section: {launch-only key: value}}, checked: each section one
    the verb reads, each key one its section marks launch-only (x-launch); anything else is
    an error naming it (a key that changes what a job computes goes in the settings)."""
    from paramill import config

    if launch is None:
        return {}
    if not isinstance(launch, dict) or not all(isinstance(v, dict) for v in launch.values()):
        raise ValueError("--launch takes an object of config sections, each an object of its "
                         'launch-only keys: {"embed.train": {"cuda_graph": false}}')
    for section, keys in launch.items():
        if section not in sections:
            raise ValueError(f"--launch names section {section}, which this step does not read "
                             f"({', '.join(sections)})")
        allowed = config.marked("launch", *section.split("."))
        wrong = sorted(set(keys) - set(allowed))
        if wrong:
            raise ValueError(
                f"--launch takes only {section}'s launch-only keys ({', '.join(allowed) or 'none'}), "
                f"not {', '.join(wrong)}: a key that changes what the job computes goes in its "
                "settings")
    return launch


#: where the manual's pages are, for the line that ends each verb's help
DOCS = "docs/"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, but a paragraph of the description or epilog whose lines are indented (a
    command line, a list) is kept as written; the others are wrapped as usual."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return "\n\n".join(
            "\n".join(indent + line for line in para.splitlines()) if "\n  " in para
            else textwrap.fill(" ".join(para.split()), width, initial_indent=indent,
                               subsequent_indent=indent)
            for para in text.strip().split("\n\n"))


@dataclasses.dataclass(frozen=True)
class _Verb:
    """One verb as :meth:`Group.verb` registered it."""

    name: str
    help: str
    description: str | None
    args: tuple
    sections: dict[str, str]
    launch: bool
    memory: tuple[str, ...]
    example: str
    docs: str
    func: Verb

    def epilog(self) -> str:
        """What ends the verb's ``--help``: one example and the page of the manual to read."""
        return f"example:\n  {self.example}\n\nmanual: {DOCS}{self.docs}"


class Group:
    """The verbs of one stage: ``paramill <group> <verb>``. ``docs``: the page of the manual
    (under ``docs/``) its verbs are described on, unless a verb names its own."""

    def __init__(self, name: str, help: str, description: str | None = None, docs: str = ""):
        self.name, self.help, self.description, self.docs = name, help, description, docs
        self.verbs: list[_Verb] = []

    def verb(self, name: str, help: str, *args: tuple, description: str | None = None,
             settings: str | dict[str, str] | None = None,
             launch: bool = False, memory: tuple[str, ...] = (), example: str = "",
             docs: str = "") -> Callable[[Verb], Verb]:
        """Register a verb. ``settings``: the config section its ``--settings`` takes, or
        {option dest: section} for several (``--model-settings`` ...); ``launch``: it takes
        ``--launch``, those sections' launch-only keys; ``memory``: the config keys that size
        what its job holds at once (``"bitext.ingest.batch_rows"``), which the error line of
        a job out of memory names; ``example``: one command line that uses it (its help ends
        with it; a test parses every one); ``docs``: its page of the manual, over the group's."""
        sections = {"settings": settings} if isinstance(settings, str) else dict(settings or {})

        def register(func: Verb) -> Verb:
            self.verbs.append(_Verb(name, help, description, args, sections, launch, memory,
                                    example, docs or self.docs, func))
            return func

        return register

    def add_to(self, sub: argparse._SubParsersAction) -> None:
        parser = sub.add_parser(self.name, description=self.description or self.help,
                                formatter_class=HelpFormatter,
                                epilog=f"manual: {DOCS}{self.docs}" if self.docs else None)
        verbs = parser.add_subparsers(dest="what", required=True, metavar="STEP")
        for verb in self.verbs:
            p = verbs.add_parser(verb.name, help=verb.help, description=verb.description or verb.help,
                                 epilog=verb.epilog(),
                                 formatter_class=HelpFormatter)
            outputs, tables = [], {}
            for flags, kw in verb.args:
                kw = dict(kw)
                output, table = kw.pop("output", False), kw.pop("table", None)
                dest = p.add_argument(*flags, **kw).dest
                if output:
                    outputs.append(dest)
                if table:
                    tables[dest] = table
            for dest, section in verb.sections.items():
                p.add_argument("--" + dest.replace("_", "-"), dest=dest, type=json_arg,
                               metavar="JSON", help=f"config section {section} (JSON, or @file "
                               "JSON/YAML); keys left out take the schema's defaults")
            if verb.launch:
                p.add_argument("--launch", type=json_arg, metavar="JSON",
                               help="launch-only keys (how the job runs, not what it computes) "
                               "of the sections above, over them: {SECTION: {KEY: VALUE}}, "
                               f"SECTION one of {', '.join(verb.sections.values())}; the workflow "
                               "passes them here, outside its params, so changing one re-runs "
                               "nothing")
            p.set_defaults(func=_with_settings(verb.func, verb.sections, verb.launch),
                           memory_keys=verb.memory, default_rule=f"{self.name}_{verb.name}",
                           output_dests=tuple(outputs),
                           table_dests=tables)


def _with_settings(func: Verb, sections: dict[str, str], launch: bool = False) -> Verb:
    def run(args: argparse.Namespace) -> int:
        from paramill.io.outputs import check_writable, remove_made_folders

        from paramill.config import check_section

        overlays = launch_overlays(args.launch, list(sections.values())) if launch else {}
        for dest, section in sections.items():
            values = section_settings(section, getattr(args, dest), overlays.get(section))
            # the same checks as a config's; a workflow's job (--rule) had its config checked whole
            setattr(args, dest, check_section(section, values, schema_too=not args.rule))
        args.rule = args.rule or args.default_rule
        made = check_writable(*[path for dest in args.output_dests
                                if (path := getattr(args, dest))])
        try:
            if args.table_dests:
                from paramill.io.tableread import check_kind

                for dest, kind in args.table_dests.items():
                    given = getattr(args, dest) or []
                    check_kind([given] if isinstance(given, str) else given, kind)
            result = func(args)
        except BaseException:
            remove_made_folders(made)  # a failed command leaves no empty output folder
            raise
        if isinstance(result, int):
            if result != 0:
                remove_made_folders(made)
            return result
        print(f"paramill {args.command} {args.what}: {result}", file=sys.stderr)
        return 0
    return run
