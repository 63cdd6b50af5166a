"""Applying fixes: edits to a fixpoint, imports added once, the result must parse, atomic writes.

A fix is a set of text edits (ruff's model). Edits of one round never overlap: a fix that
touches text another fix of the round already changed waits for the next round, when the
file is checked again. A round whose result does not parse is dropped whole, and the file
keeps the text of the last good round.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from synclint.config import Settings
from synclint.engine import FileResult, check_source, problem_finding, PARSE_ERROR
from synclint.project.facts import ProjectFile
from synclint.model import Applicability, Edit, Finding, Fix
from synclint.source import DecodeProblem, SourceText, decode

MAX_ROUNDS = 10
# What SYNC000 says of valid Python that synclint will not analyse (source.too_complex): the one
# SYNC000 a `# noqa` silences (a file that does not parse is excluded or fixed, not silenced).
TOO_COMPLEX = "expression too long to analyse"


@dataclass
class FixOutcome:
    text: str
    fixed: Counter = field(default_factory=Counter)  # code -> fixes applied
    remaining: list[Finding] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # why fixes were not applied
    hidden_tests: int = 0  # of the last check: findings in test code the view left out
    hidden_contexts: int = 0  # of the last check: findings `ignore-contexts` left out
    analysis: list[Finding] | None = None  # of the last check: every finding, before the view


def _offsets(text: str) -> list[int]:
    """Offset of the start of each line (1-based rows map to index row - 1)."""
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
        elif ch == "\r" and (i + 1 == len(text) or text[i + 1] != "\n"):
            starts.append(i + 1)
    return starts


def apply_edits(text: str, edits: list[Edit], newline: str = "\n") -> str:
    """Apply non-overlapping edits (positions in rows and 1-based columns of `text`)."""
    starts = _offsets(text)

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + column - 1 if row - 1 < len(starts) else len(text)

    spans = sorted(((offset(e.location.row, e.location.column), offset(e.end_location.row, e.end_location.column), e)
                    for e in edits), key=lambda s: s[0], reverse=True)
    for start, end, edit in spans:
        content = edit.content
        if newline != "\n":
            content = content.replace("\r\n", "\n").replace("\n", newline)
        text = text[:start] + content + text[end:]
    return text


def _span(fix: Fix) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    return [((e.location.row, e.location.column), (e.end_location.row, e.end_location.column)) for e in fix.edits]


def _overlaps(a, b) -> bool:
    return any(s1 < e2 and s2 < e1 or s1 == s2 for s1, e1 in a for s2, e2 in b)


def add_imports(text: str, imports: set[str]) -> str:
    """Add import statements the fixes need, with libcst's import helper (once, after existing imports)."""
    if not imports:
        return text
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    module = cst.parse_module(text)
    context = CodemodContext()
    for statement in sorted(imports):
        parts = statement.split()
        if parts[0] == "import":
            AddImportsVisitor.add_needed_import(context, parts[1])
        elif parts[0] == "from" and len(parts) >= 4:
            AddImportsVisitor.add_needed_import(context, parts[1], parts[3])
    return AddImportsVisitor(context).transform_module(module).code


def apply_fixes(text: str, fixes: list[Fix], relpath: str, newline: str = "\n") -> str:
    """`text` with `fixes` applied as one round of `fix_text` applies them (their edits must not
    overlap; a fix two findings share counts once), with the imports they need; raises libcst's
    ParserSyntaxError, SyntaxError or ValueError when the result does not parse."""
    edits = list(dict.fromkeys(edit for fix in fixes for edit in fix.edits))
    new_text = apply_edits(text, edits, newline)
    new_text = add_imports(new_text, {imp for fix in fixes for imp in fix.imports})
    cst.parse_module(new_text)
    compile(new_text, relpath, "exec", dont_inherit=True)
    return new_text


def fix_text(source: SourceText, relpath: str, settings: Settings, unsafe: bool,
             project: ProjectFile | None = None, first: FileResult | None = None) -> FixOutcome:
    """Fix `source` to a fixpoint; returns the new text, counts, and the findings left.
    `first`: the check of `source` with these settings and project, when the run has it
    already (its first round is then not checked again)."""
    text = source.text
    outcome = FixOutcome(text)
    current = source
    for round_ in range(MAX_ROUNDS):
        if round_ == 0 and first is not None:
            result = first
        else:
            result = check_source(current, relpath, settings, project=project)
        findings = result.findings
        outcome.hidden_tests, outcome.analysis = result.hidden_tests, result.analysis
        outcome.hidden_contexts = result.hidden_contexts
        chosen: list[Finding] = []
        for finding in findings:
            fix = finding.fix
            if fix is None or (fix.applicability is Applicability.UNSAFE and not unsafe):
                continue
            # Several findings may share one fix (both operands of a guarded clamp): apply it once.
            if any(other.fix is not None and other.fix.edits == fix.edits for other in chosen):
                chosen.append(finding)
                continue
            if any(other.fix is not None and _overlaps(_span(fix), _span(other.fix)) for other in chosen):
                continue
            chosen.append(finding)
        if not chosen:
            outcome.remaining = findings
            break
        try:
            new_text = apply_fixes(current.text, [f.fix for f in chosen if f.fix is not None], relpath, current.newline)
        except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
            outcome.dropped.append(
                f"{relpath}: fixes for {', '.join(sorted({f.code for f in chosen}))} dropped: the result would not parse ({exc})"
            )
            outcome.remaining = findings
            break
        if new_text == current.text:
            outcome.remaining = findings
            break
        outcome.fixed.update(f.code for f in chosen)
        current = SourceText(new_text, source.encoding, source.bom, source.newline)
    else:
        result = check_source(current, relpath, settings, project=project)
        outcome.remaining, outcome.hidden_tests, outcome.analysis = result.findings, result.hidden_tests, result.analysis
        outcome.hidden_contexts = result.hidden_contexts
    outcome.text = current.text
    return outcome


@dataclass
class FileFix:
    """What fixing one file did."""

    result: FileResult
    fixed: Counter = field(default_factory=Counter)
    diff: str = ""
    written: bool = False
    problems: list[str] = field(default_factory=list)
    new_bytes: bytes | None = field(default=None, repr=False)  # the fixed file, when fixing changed it


def fix_file(path: Path, relpath: str, settings: Settings, unsafe: bool, write: bool, debug: bool = False,
             project: ProjectFile | None = None, checked: tuple[bytes, FileResult] | None = None) -> FileFix:
    """Fix one file (and with `write`, write it). `checked`: the sha256 digest of the bytes a
    check of this file read and what it found, used as the first round if the file still
    holds those bytes."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileFix(FileResult(relpath, internal_error=f"{relpath}: cannot read: {exc.strerror or exc}"))
    first = checked[1] if checked is not None and hashlib.sha256(data).digest() == checked[0] else None
    fix = fix_bytes(data, relpath, settings, unsafe, debug, project, first)
    if write and fix.new_bytes is not None:
        problem = write_atomically(path, data, fix.new_bytes)
        if problem:
            fix.problems.append(f"{relpath}: {problem}")
            fix.fixed = Counter()
        else:
            fix.written = True
    fix.new_bytes = None  # on disk now, or in the diff: not worth sending back from a worker
    return fix


def fix_bytes(data: bytes, relpath: str, settings: Settings, unsafe: bool, debug: bool = False,
              project: ProjectFile | None = None, first: FileResult | None = None) -> FileFix:
    """Fix a file's bytes in memory; `new_bytes` is the fixed file, None when nothing changed."""
    try:
        source = decode(data)
    except DecodeProblem as exc:
        return FileFix(FileResult(relpath, [problem_finding(PARSE_ERROR, relpath, str(exc), exc.row, exc.column)]))
    try:
        outcome = fix_text(source, relpath, settings, unsafe, project, first)
    except Exception:  # never damage a file: fall back to a plain check
        result = check_source(source, relpath, settings, debug=debug, project=project)
        return FileFix(result, problems=[f"{relpath}: fixing failed; file left as it was"])
    result = FileResult(relpath, outcome.remaining, source=source, hidden_tests=outcome.hidden_tests,
                        hidden_contexts=outcome.hidden_contexts,
                        analysis=outcome.analysis if outcome.text == source.text else None)
    if result.findings and any(f.code == "SYNC001" for f in result.findings):
        result.internal_error = f"{relpath}: internal error while fixing"
    fix = FileFix(result, outcome.fixed, problems=list(outcome.dropped))
    if outcome.text == source.text:
        return fix
    fix.diff = "".join(
        difflib.unified_diff(
            source.text.splitlines(keepends=True),
            outcome.text.splitlines(keepends=True),
            fromfile=f"a/{relpath}",  # as git writes them: `git apply` and `patch -p1` take it as it is
            tofile=f"b/{relpath}",
        )
    )
    try:
        fix.new_bytes = source.encode(outcome.text)
    except UnicodeEncodeError:
        fix.diff, fix.fixed = "", Counter()
        fix.problems.append(f"{relpath}: the fixed text cannot be written as {source.encoding}; left as it was")
    return fix


def write_atomically(path: Path, original: bytes, new: bytes) -> str | None:
    """Replace the file's content in one rename; refuse if it changed on disk since it was read."""
    try:
        if path.read_bytes() != original:
            return "changed on disk while being fixed; left as it is"
        mode = stat.S_IMODE(path.stat().st_mode)
        # The mode bits, not os.access: running as root must not clobber a file marked read-only.
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
            return "read-only; left as it is"
        target = path.resolve()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".synclint")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(new)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        return f"cannot write: {exc.strerror or exc}"
    return None


@dataclass
class NoqaOutcome:
    """What `--add-noqa` did to one file: the directives added (by code), whether it was written,
    and why rows were left without one."""

    added: Counter = field(default_factory=Counter)
    written: bool = False
    problems: list[str] = field(default_factory=list)


def add_noqa_file(path: Path, relpath: str, findings: list[Finding]) -> NoqaOutcome:
    """`--add-noqa`: append `# noqa: CODE` to the line of each of `findings` (those a check of the
    file showed, cross-file findings included), so the file checks clean. Never writes a file that
    would not parse, nor one that changed on disk meanwhile."""
    from synclint.noqa import add_noqa

    outcome = NoqaOutcome()
    wanted: dict[int, set[str]] = {}
    too_complex = [f for f in findings if f.code == PARSE_ERROR[0] and f.message.startswith(TOO_COMPLEX)]
    for finding in findings:
        if finding.code not in (PARSE_ERROR[0], "SYNC001") or finding in too_complex:
            wanted.setdefault(finding.noqa_row or finding.location.row, set()).add(finding.code)
    if not wanted:
        return outcome
    try:
        data = path.read_bytes()
        source = decode(data)
    except OSError as exc:
        outcome.problems.append(f"{relpath}: no `# noqa` added: cannot read: {exc.strerror or exc}")
        return outcome
    except DecodeProblem:
        return outcome  # its check reports it (SYNC000)
    text, changed, skipped = add_noqa(source.text, wanted)
    for row in skipped:
        outcome.problems.append(f"{relpath}:{row}: no `# noqa` added: the line cannot end in a comment")
    if not changed:
        return outcome
    try:
        compile(text, relpath, "exec", dont_inherit=True)
        new = source.encode(text)
    except (SyntaxError, ValueError, UnicodeEncodeError) as exc:  # never write a file that stopped parsing
        outcome.problems.append(f"{relpath}: no `# noqa` added: the result would not parse ({exc})")
        return outcome
    problem = write_atomically(path, data, new)
    if problem:
        outcome.problems.append(f"{relpath}: {problem}")
        return outcome
    outcome.written = True
    outcome.added = Counter(f.code for f in findings if (f.noqa_row or f.location.row) in wanted
                            and (f.noqa_row or f.location.row) not in skipped
                            and (f.code not in (PARSE_ERROR[0], "SYNC001") or f in too_complex))
    return outcome
