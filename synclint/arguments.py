"""The command line's grammar: every subcommand and option, read by the CLI and by the docs.

`CHECK_OPTIONS` declares the options of `synclint check` as data; `build_parser` turns them
into argparse, and `synclint.docs` renders the README's option table from the same data.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from synclint import __version__

SUBCOMMANDS = ("check", "rules", "rule", "verify", "trace", "clean", "server")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # exit 2 with one clear line, as argparse does, but no usage dump
        raise UsageError(message + self._did_you_mean(message))

    def _did_you_mean(self, message: str) -> str:
        """`--fxi`: "; did you mean --fix?" (ruff's tip), for an unrecognized option close to one of ours."""
        import difflib

        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        parsers = [self, *(parser for action in self._actions if isinstance(action, argparse._SubParsersAction)
                           for parser in action.choices.values())]
        flags = list(dict.fromkeys(flag for parser in parsers for action in parser._actions
                                   for flag in action.option_strings))
        for word in message[len(prefix):].split():
            close = difflib.get_close_matches(word.split("=")[0], flags, n=1, cutoff=0.75) if word.startswith("--") else []
            if close:
                return f"; did you mean {close[0]}?"
        return ""


def codes(text: str) -> list[str]:
    """`SYNC101, sync102` -> ["SYNC101", "SYNC102"]."""
    return [c.strip().upper() for c in text.split(",") if c.strip()]


def globs(text: str) -> list[str]:
    return [p for p in text.split(",") if p]


def names(text: str) -> list[str]:
    """`a, b` -> ["a", "b"]."""
    return [name.strip() for name in text.split(",") if name.strip()]


def contexts(text: str) -> list[str]:
    """`interval,code` -> ["interval", "code"]: finding contexts (config.CONTEXTS); `""` names none."""
    from synclint.config import CONTEXTS

    chosen = names(text)
    unknown = [c for c in chosen if c not in CONTEXTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"knows {', '.join(CONTEXTS)}, not {unknown[0]!r}")
    return chosen


def per_file_ignore(text: str) -> tuple[str, list[str]]:
    """`tests/*:SYNC107,SYNC101` -> ("tests/*", ["SYNC107", "SYNC101"]) (the glob is what comes before
    the last colon)."""
    glob, colon, chosen = text.rpartition(":")
    if not colon or not glob or not codes(chosen):
        raise argparse.ArgumentTypeError(f"expected GLOB:CODES (benchmarks/*:SYNC107,SYNC110), not {text!r}")
    return glob, codes(chosen)


@dataclass(frozen=True)
class Option:
    """One option: its flags, its help, and the rest of what `add_argument` takes."""

    flags: tuple[str, ...]
    help: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def takes_value(self) -> bool:
        return self.settings.get("action") not in ("store_true", "store_false")

    @property
    def value_name(self) -> str:
        """How the option's value is written in documentation (its choices, or its metavar)."""
        choices = self.settings.get("choices")
        if choices:
            return "\\|".join(choices)
        return self.settings.get("metavar") or self.flags[0].lstrip("-").upper()


def _option(*flags: str, help: str, **settings: Any) -> Option:
    return Option(flags, help, settings)


CHECK_OPTIONS: tuple[Option, ...] = (
    _option("--fix", help="apply fixes (safe ones; unsafe ones too with --unsafe-fixes)", action="store_true"),
    _option("--diff", help="print the diff --fix would apply and write nothing", action="store_true"),
    _option("--unsafe-fixes", help="also apply fixes that may change behaviour", action="store_true", default=None),
    _option("--no-unsafe-fixes", help="never apply unsafe fixes", dest="unsafe_fixes", action="store_false"),
    _option("--exit-non-zero-on-fix", help="with --fix, exit 1 when anything was fixed", action="store_true"),
    _option("--config", type=Path, metavar="FILE",
            help="a pyproject.toml or synclint.toml to use instead of the nearest one"),
    _option("--select", help="rule codes or prefixes to enable, comma-separated", type=codes, metavar="CODES"),
    _option("--extend-select", type=codes, metavar="CODES",
            help="rule codes or prefixes to enable on top of the selection"),
    _option("--ignore", help="rule codes or prefixes to disable, comma-separated", type=codes, metavar="CODES"),
    _option("--per-file-ignores", type=per_file_ignore, action="append", metavar="GLOB:CODES",
            help="codes to disable in the files a glob matches (repeatable; replaces `per-file-ignores`)"),
    _option("--ignore-contexts", type=contexts, metavar="CONTEXTS",
            help="finding contexts to drop, comma-separated: loop, step, interval, init, test, code (`\"\"`: none)"),
    _option("--allow-sync-contexts", type=names, metavar="NAMES",
            help="context managers inside which syncs are meant, comma-separated (replaces the list)"),
    _option("--host-name-patterns", type=globs, metavar="GLOBS",
            help="name globs of host values, comma-separated (replaces the defaults *_cpu, *_np, ...)"),
    _option("--device-name-patterns", type=globs, metavar="GLOBS",
            help="name globs of device tensors, comma-separated (replaces the defaults *_gpu, *_cuda, ...)"),
    _option("--extend-rules", type=globs, metavar="DIRS",
            help="folders of your own rule modules, comma-separated"),
    _option("--min-confidence", help="report only findings this sure", choices=("low", "medium", "high")),
    _option("--include-tests", action="store_true", default=None,
            help="also report findings in test code (tests/, test_*.py, *_test.py, conftest.py, functions named test_*)"),
    _option("--no-include-tests", dest="include_tests", action="store_false",
            help="leave out findings in test code (the default), whatever the configuration says"),
    _option("--output-format", choices=("text", "concise", "json", "sarif", "github"),
            help="text marks the source line; json is ruff's shape; sarif is SARIF 2.1.0; github prints annotations"),
    _option("--output-file", "-o", help="write the report to this file", type=Path, metavar="FILE"),
    _option("--statistics", help="print counts per rule, split by context, instead of each finding", action="store_true"),
    _option("--quiet", "-q", action="store_true",
            help="print the findings only: no progress, no summary line"),
    _option("--verbose", "-v", action="store_true",
            help="print, on standard error, each phase of the run: its files, how many came from the cache, its time"),
    _option("--exit-zero", help="exit 0 even when there are findings", action="store_true"),
    _option("--exclude", type=globs, metavar="GLOBS",
            help="globs of paths never checked, comma-separated (replaces the defaults and `exclude`)"),
    _option("--extend-exclude", help="more globs to skip", type=globs, metavar="GLOBS"),
    _option("--force-exclude", help="apply excludes to files named on the command line", action="store_true"),
    _option("--no-respect-gitignore", help="also check files that .gitignore names", action="store_true"),
    _option("--stdin-filename", metavar="PATH",
            help="with `-` as the path: the file name the source on stdin stands for"),
    _option("--baseline", help="report only findings not recorded in this baseline file", type=Path, metavar="FILE"),
    _option("--write-baseline", type=Path, metavar="FILE",
            help="record the current findings in FILE, to use with --baseline"),
    _option("--add-noqa", help="add `# noqa: CODE` to the line of every finding", action="store_true"),
    _option("--runtime-report", type=Path, metavar="FILE",
            help="a sync report (`synclint trace --report`, `pytest --sync-report`): findings the run confirmed "
                 "first, by measured wait; syncs no rule found"),
    _option("--no-project-analysis", action="store_true",
            help="check each file alone: do not index the packages of the checked files"),
    _option("--no-cache", help="check every file again; read and write no cache", action="store_true"),
    _option("--cache-dir", type=Path, metavar="DIR",
            help="where results are cached (default: .synclint_cache in the project root)"),
    _option("--jobs", "-j", help="worker processes (default: the CPU count)", type=int, default=None, metavar="N"),
    _option("--debug", help="show tracebacks of internal errors", action="store_true"),
)


def warmup(text: str) -> tuple[int, float]:
    """`--skip-first`: `200` (syncs) -> (200, 0.0); `5s` or `2.5s` (seconds) -> (0, 5.0)."""
    try:
        if text.endswith("s"):
            seconds = float(text[:-1])
            if seconds >= 0:
                return 0, seconds
        elif int(text) >= 0:
            return int(text), 0.0
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"expected a number of syncs (200) or of seconds (5s), not {text!r}")


def _positive(kind: type):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse


TRACE_OPTIONS: tuple[Option, ...] = (
    _option("--report", type=Path, metavar="FILE",
            help="write the sync sites, counts and waits as JSON (the schema `check --runtime-report` reads)"),
    _option("--timeline", type=Path, metavar="FILE",
            help="write the run as a Chrome trace (Perfetto, chrome://tracing): each sync a slice on its rank's track"),
    _option("--skip-first", type=warmup, metavar="N[s]", default=(0, 0.0),
            help="record nothing during the warm-up: the first N syncs, or the first N seconds"),
    _option("--max-steps", type=_positive(int), metavar="N",
            help="stop the program once its busiest sync site has synced N times after the warm-up"),
    _option("--max-seconds", type=_positive(float), metavar="S", help="stop the program S seconds after it started"),
    _option("--source", type=Path, action="append", metavar="DIR",
            help="count only the files under DIR as your code (repeatable; default: every file outside the standard "
                 "library, site-packages, torch and synclint)"),
    _option("--device", choices=("auto", "cuda", "cpu"), default="auto",
            help="cuda: CUDA's sync debug mode, timed; cpu: the simulation, counts only (default: cuda if available)"),
    _option("--no-times", action="store_true",
            help="on CUDA, count the syncs without timing each torch call (less overhead; no waits)"),
    _option("--no-check", action="store_true",
            help="leave out the static findings beside the sites (no `synclint check` of their files)"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="synclint", description="Find and fix hidden GPU<->CPU synchronizations in PyTorch code.")
    parser.add_argument("--version", action="version", version=f"synclint {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = sub.add_parser("check", help="check files or folders (the default command)")
    check.add_argument("paths", nargs="*", type=Path, help="files or folders to check (default: .)")
    for option in CHECK_OPTIONS:
        check.add_argument(*option.flags, help=option.help, **option.settings)

    clean = sub.add_parser("clean", help="remove the result cache")
    clean.add_argument("--cache-dir", type=Path, metavar="DIR", help="the cache to remove (default: as `check` uses)")
    sub.add_parser("rules", help="print the table of rules")
    rule = sub.add_parser("rule", help="print one rule's documentation")
    rule.add_argument("code", help="a rule code (SYNC101) or name (sync-in-condition)")
    from synclint.verify.command import add_arguments  # no torch: that is imported when verify runs

    add_arguments(sub.add_parser("verify", help="run the fixture kernels before and after the fixer (needs torch)"))
    trace = sub.add_parser("trace", help="run a program and rank its syncs by the time the host waited (needs torch)",
                           usage="synclint trace [options] -- python script.py [args...]")
    for option in TRACE_OPTIONS:
        trace.add_argument(*option.flags, help=option.help, **option.settings)
    server = sub.add_parser("server", help="run the language server over stdin/stdout (needs the server extra)")
    server.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help="the cache to read and fill (default: as `check` run from the workspace folder uses)")
    server.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="worker processes of the runs that index a package (default: the CPU count)")
    return parser
