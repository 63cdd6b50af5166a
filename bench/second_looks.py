#!/usr/bin/env python3
"""What the second looks of a cold run are for: which answers send each file to one, and how many
of them change what the file's first look found.

    python bench/second_looks.py --tree /work/vllm-src/vllm/0.22.0/vllm

A cold run checks every file once with no facts of other files (its first look), solves the
summaries once, and checks again each file whose answers (`ProjectIndex.answers_for`) are not
empty (synclint.project.run). This script does the same in one process, with the default
settings and no cache: every file's first look, one solve, then, for each file with answers, its
look with them. It prints how many files have answers of each kind (a callee's result, its chain
of syncs, a base class's attributes, the GPU tensors callers pass, keyword-only parameters every
call fills with a host tensor, syncing properties), and how many second looks change the file's
findings at all, and at medium or high confidence (the policy's confidence, before the solve of
how often code runs). A bench script: it prints, asserts nothing, and exits 0.
"""

from __future__ import annotations

import argparse
import collections
import time
from dataclasses import replace
from pathlib import Path

import libcst as cst

from benchlib import iter_py_files
from synclint.config import build_settings
from synclint.engine import analyse
from synclint.model import Confidence, Finding
from synclint.project.facts import Answers, ModuleSummary, ProjectFile
from synclint.project.index import ProjectIndex
from synclint.project.placement import module_name
from synclint.source import DecodeProblem, decode


def kinds(answers: Answers) -> set[str]:
    found = set()
    for fact in answers.functions.values():
        if fact.returns is not None:
            found.add("returns")
        if fact.chain is not None:
            found.add("chain")
    for kind in ("class_attrs", "device_params", "host_params", "properties"):
        if getattr(answers, kind):
            found.add(kind)
    return found


def shown(findings: list[Finding], default_only: bool) -> list[tuple]:
    return sorted((f.code, f.location.row, f.location.column, f.end_location.row, f.end_location.column,
                   f.confidence.value, f.context, f.message, f.because)
                  for f in findings if not default_only or f.confidence is not Confidence.LOW)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="a package folder")
    args = parser.parse_args()
    settings = build_settings({}, args.tree.resolve().parent, None)
    started = time.perf_counter()
    texts: dict[str, tuple[str, ProjectFile]] = {}
    summaries: dict[str, ModuleSummary] = {}
    firsts: dict[str, list[Finding]] = {}
    for path in iter_py_files(args.tree.resolve()):
        try:
            text = decode(path.read_bytes()).text
        except (OSError, DecodeProblem):
            continue
        module, package = module_name(path)
        project = ProjectFile(module, package)
        try:
            findings, summary = analyse(text, str(path), settings, project=project)
        except (cst.ParserSyntaxError, RecursionError):
            continue
        texts[str(path)] = (text, project)
        firsts[str(path)] = findings
        if summary is not None:
            summaries[str(path)] = summary
    index = ProjectIndex(summaries.values())
    by_kind: collections.Counter[str] = collections.Counter()
    alone: collections.Counter[str] = collections.Counter()
    looks = changed = changed_default = 0
    for name, summary in summaries.items():
        answers = index.answers_for(summary)
        if not answers:
            continue
        looks += 1
        found = kinds(answers)
        by_kind.update(found)
        alone["+".join(sorted(found))] += 1
        text, project = texts[name]
        again, _ = analyse(text, name, settings, project=replace(project, answers=answers))
        if shown(again, False) != shown(firsts[name], False):
            changed += 1
        if shown(again, True) != shown(firsts[name], True):
            changed_default += 1
    print(f"{args.tree}: {len(texts)} files analysed, {len(summaries)} summaries, {looks} second looks "
          f"({time.perf_counter() - started:.0f} s in one process)")
    print("files with answers of each kind: " + ", ".join(f"{k} {v}" for k, v in by_kind.most_common()))
    print("the kinds together: " + ", ".join(f"{k} {v}" for k, v in alone.most_common()))
    print(f"second looks that change the file's findings: {changed} of {looks}; "
          f"at medium or high confidence: {changed_default} of {looks}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
