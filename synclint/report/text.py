"""Human output: `path:row:col: CODE message`, and in full text the source line marked (rich).

The full text report shows the findings that cost most first: those paid every step (a per-step
method, a loop: contexts `step` and `loop`), then those paid every so many steps (`interval`),
then the rest (`code`: once per call as far as synclint knows), set-up code (`init`) and tests
last; by file, line and column within each group (with `--runtime-report`, the findings a run
confirmed come first, by measured wait). Its header lines name the context. The
concise format, like the machine formats (JSON, SARIF, GitHub), lists findings by file, line
and column.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TextIO

from synclint.model import ENGINE_CODES, Applicability, Finding
from synclint.runtime import runtime_note


# How often a finding's context pays its wait, most often first (config.CONTEXTS names them), and
# how the summary says it.
HOTNESS = {"loop": 0, "step": 0, "interval": 1, "code": 2, "host": 3, "init": 3, "test": 4, "never": 5}
HOW_OFTEN = {"loop": "in loops", "step": "per step", "interval": "at intervals", "code": "per call",
             "host": "on the host", "init": "once", "test": "in tests", "never": "never called"}


def hot_first(findings: list[Finding]) -> list[Finding]:
    """The findings (in file order) with those paid every step first, the surest first within each
    group (see the module docstring); with a runtime report, those a run confirmed come before all
    of them, in the order of their measured wait (`runtime.confirm` gives that order)."""
    return sorted(findings, key=lambda f: (0, 0, 0) if f.runtime_syncs
                  else (1, HOTNESS.get(f.context, len(HOTNESS)), -f.confidence))


def how_often(findings: list[Finding]) -> str:
    """How many findings run how often, most often first: `9 in loops, 3 per step, 30 per call`."""
    counts = Counter(f.context for f in findings if f.code not in ENGINE_CODES)
    order = sorted(counts, key=lambda c: (HOTNESS.get(c, len(HOTNESS)), list(HOW_OFTEN).index(c) if c in HOW_OFTEN
                                          else len(HOW_OFTEN), c))
    return ", ".join(f"{counts[c]} {HOW_OFTEN.get(c, c)}" for c in order)


def headline(f: Finding) -> str:
    return f"{f.filename}:{f.location.row}:{f.location.column}: {f.code} {f.message}"


@dataclass(frozen=True)
class Outcome:
    """What the summary line says beside the findings: the findings in test code the view left
    out, the errors of the run (an unreadable path, a rule's crash), and whether to say anything."""

    hidden_tests: int = 0
    errors: int = 0
    quiet: bool = False  # --quiet: the findings only
    no_files: bool = False  # the paths held no Python file to check
    hidden_contexts: int = 0  # findings that `ignore-contexts` alone left out


NOTHING_ELSE = Outcome()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def summary(findings: list[Finding], outcome: Outcome = NOTHING_ELSE) -> str:
    """The last line(s) of a text report. A run with errors never says "All checks passed!"."""
    n = len(findings)
    if outcome.errors:
        text = (f"Found {_plural(n, 'finding')}, and {_plural(outcome.errors, 'error')}: not everything was checked."
                if n else f"{_plural(outcome.errors, 'error')}; no findings in what could be checked.")
    elif not n and outcome.no_files:
        text = "No Python files checked."
    elif not n:
        text = "All checks passed!"
    else:
        often = how_often(findings)
        text = f"Found {_plural(n, 'finding')}" + (f": {often}." if often else ".")
    if outcome.hidden_tests:
        text += (f" ({_plural(outcome.hidden_tests, 'finding')} in test code left out: `--include-tests` "
                 "shows them.)")
    if outcome.hidden_contexts:
        text += f" ({_plural(outcome.hidden_contexts, 'finding')} left out by `ignore-contexts`.)"
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)
    if safe:
        text += f"\n[*] {safe} fixable with `--fix`."
    if unsafe:
        text += f"\n{unsafe} more fixable with `--fix --unsafe-fixes`."
    return text


def write_concise(findings: list[Finding], stream: TextIO, outcome: Outcome = NOTHING_ELSE) -> None:
    for f in findings:
        stream.write(headline(f) + "\n")
    if not outcome.quiet:
        stream.write(summary(findings, outcome) + "\n")


def write_text(findings: list[Finding], stream: TextIO, color: bool | None = None, fixable_hint: bool = True,
               outcome: Outcome = NOTHING_ELSE) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(file=stream, highlight=False, soft_wrap=True, force_terminal=color, no_color=(color is False) or None,
                      emoji=False)
    for f in hot_first(findings):
        mark = " [*]" if f.fix is not None and f.fix.applicability is Applicability.SAFE else ""
        console.print(
            f"[bold]{escape(f.filename)}[/]:{f.location.row}:{f.location.column}: "
            f"[bold red]{f.code}[/]{mark} [magenta]({f.context})[/] {escape(f.message)}"
        )
        if f.source_line:
            gutter = len(str(f.location.row))
            line = f.source_line.expandtabs(4) if "\t" not in f.source_line[: f.location.column] else f.source_line
            start = f.location.column - 1
            end = f.end_location.column - 1 if f.end_location.row == f.location.row else len(f.source_line.rstrip())
            width = max(end - start, 1)
            console.print(f"[blue]{' ' * gutter} |[/]")
            console.print(f"[blue]{f.location.row} |[/] {escape(line)}")
            console.print(f"[blue]{' ' * gutter} |[/] {' ' * start}[bold red]{'^' * width}[/] [red]{f.code}[/]")
            if f.runtime_syncs:
                console.print(f"[blue]{' ' * gutter} =[/] [green]confirmed[/]: {escape(runtime_note(f))}")
            if f.because:
                console.print(f"[blue]{' ' * gutter} =[/] [cyan]because[/]: {escape(f.because)} ({f.confidence} confidence)")
            console.print()
    if not outcome.quiet:
        console.print(escape(summary(findings, outcome)))
