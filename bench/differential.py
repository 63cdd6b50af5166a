#!/usr/bin/env python3
"""The differential: synclint's exact JSON findings at every confidence, per tree and per way of
running it, and how many times each file was analysed (issue 33, step 1).

    python bench/differential.py snapshot --small --out /tmp/a.json
    python bench/differential.py snapshot --tree /work/trees/vllm-0.33.0/vllm --modes cold,alone,stdin \\
        --alone-sample 12 --seed 33 --out /tmp/a.json --append
    python bench/differential.py compare /tmp/a.json /tmp/b.json --show 5
    python bench/differential.py compare /tmp/a.json          # one snapshot: do its modes agree?
    python bench/differential.py trees DIR                   # write the small trees, to look at them
    python bench/differential.py merge A1.json A2.json --out A.json  # parts taken with one synclint

`snapshot` runs `PY -m synclint check --output-format json --exit-zero --min-confidence low
--include-tests` over each tree, from the tree's parent with the tree's name as the path (so the
shown paths do not depend on where the tree lies), in each mode:

  cold    --no-cache --jobs J (J: --jobs, default 2)
  j1      --no-cache --jobs 1
  jN      --no-cache --jobs N (N: --many-jobs, default 4)
  fill    --cache-dir D --jobs J, D a fresh temporary folder (run when warm or cached is asked)
  warm    the same command again: nothing changed, so synclint replays the fill's output
  cached  the same command once more after the replay records of D are removed: each file's
          result comes from the per-file cache (as CI meets a restored cache)
  alone   each file of the sample checked alone by its path, --no-cache --jobs J
  stdin   each file of the sample on standard input, --stdin-filename PATH -, --no-cache --jobs J

The sample is every .py file of the tree, or --alone-sample N of them drawn with --seed.
Each finding becomes a canonical record (code, filename, row, col, end, confidence, context,
message, because, fix with its edits); the records of a run are sorted. The snapshot keeps, per
tree and mode, the records, the wall time, the exit code, and the analyses per file.

Analyses per file are counted without changing synclint: synclint runs through a driver
(`PY -P -c DRIVER`) that wraps `synclint.engine.analyse` (the one per-file analysis; the driver
also replaces every reference to it that a loaded module took by name) so that each call appends
`pid<TAB>relpath` to the file that $SYNCLINT_ANALYSES_LOG names, opened with O_APPEND: short lines,
so the appends of forked pool workers (which inherit the wrapper) do not interleave.
$SYNCLINT_COUNT (`module:function`) names another function to count, after a refactor.

To snapshot another commit, point PYTHONPATH at a copy of it (with rules/ copied into its
synclint/rules, as bench/README.md says) or pass --python of a venv that installed it; `-P`
keeps the working directory (a checkout's parent, for fixtures/) off sys.path.

`compare` prints, per tree and mode of two snapshots, the findings in each, added, removed and
changed (same code, file, row and column; another confidence, context, because, message, end or
fix), by rule and kind of change with up to --show examples; then, within each snapshot, whether
every mode equals `cold` exactly, with the files that differ; and one verdict line per tree.
A bench script: it prints, asserts nothing, and exits 0.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from benchlib import REPO, iter_py_files, source_fingerprint, table

FORMAT = 1
MODES = ("cold", "j1", "jN", "fill", "warm", "cached", "alone", "stdin")
DEFAULT_MODES = ("cold", "j1", "jN", "warm", "cached", "alone", "stdin")
PER_FILE_MODES = ("alone", "stdin")
BASE_ARGS = ("check", "--output-format", "json", "--exit-zero", "--min-confidence", "low", "--include-tests")
LOG_VARIABLE = "SYNCLINT_ANALYSES_LOG"  # read by DRIVER, as is SYNCLINT_COUNT
FIELDS = ("confidence", "context", "because", "message", "end", "fix")  # what a change can change

# Run as `PY -P -c DRIVER ARGS...`: synclint's `main`, with its per-file analysis counted.
DRIVER = r'''
import importlib, os, sys


def count(log, target):
    """Wrap `target` (module:function) so that each call appends `pid<TAB>relpath` to `log`."""
    where, _, name = target.partition(":")
    module = importlib.import_module(where)
    original = getattr(module, name)

    def counted(text, relpath, *args, **kwargs):
        line = f"{os.getpid()}\t{relpath}\n".encode("utf-8", "surrogateescape")
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        return original(text, relpath, *args, **kwargs)

    counted.__wrapped__ = original
    import synclint.cli  # what a check imports up front; what it imports later finds the wrapper

    for loaded in list(sys.modules.values()):
        if loaded is not sys.modules["__main__"]:
            for attribute, value in list(getattr(loaded, "__dict__", {}).items()):
                if value is original:
                    setattr(loaded, attribute, counted)
    return getattr(module, name) is counted


if os.environ.get("SYNCLINT_ANALYSES_LOG"):
    target = os.environ.get("SYNCLINT_COUNT", "synclint.engine:analyse")
    if not count(os.environ["SYNCLINT_ANALYSES_LOG"], target):
        sys.exit(f"differential: could not wrap {target}")
from synclint.cli import entry_point

sys.argv = ["synclint", *sys.argv[1:]]
sys.exit(entry_point())
'''


# --- trees --------------------------------------------------------------------------------------


def small_trees_module() -> ModuleType:
    """tests/trees.py, loaded by its path (stdlib only): the frozen small package trees."""
    spec = importlib.util.spec_from_file_location("synclint_small_trees", REPO / "tests" / "trees.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Tree:
    label: str
    path: Path  # the package folder (or a folder of files), checked as `path.name` from `path.parent`

    @property
    def cwd(self) -> Path:
        return self.path.parent

    def files(self) -> list[str]:
        """Every .py file, as a path relative to the working directory (posix)."""
        return [p.relative_to(self.cwd).as_posix() for p in iter_py_files(self.path)]

    def digest(self) -> str:
        digest = hashlib.sha256()
        for name in self.files():
            digest.update(name.encode() + b"\0" + (self.cwd / name).read_bytes() + b"\0")
        return digest.hexdigest()[:16]


def parse_tree(spec: str) -> Tree:
    label, _, path = spec.rpartition("=")
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise SystemExit(f"differential: no folder {folder}")
    return Tree(label or folder.name, folder)


def small_trees(into: Path) -> list[Tree]:
    """fixtures/ of this checkout, and the package trees of tests/trees.py written under `into`."""
    trees = [Tree("fixtures", REPO / "fixtures")]
    module = small_trees_module()
    for label in module.TREES:
        trees.append(Tree(label, module.build(label, into / label.replace("/", "-"))))
    return trees


# --- running synclint ---------------------------------------------------------------------------


@dataclass
class Run:
    """One synclint command: its canonical records, exit code, wall time and analyses."""

    records: list[dict[str, Any]]
    returncode: int
    wall: float
    analyses: Counter[str]
    processes: int
    stderr: str = ""

    def problems(self) -> str:
        bad = self.returncode != 0 or "Traceback" in self.stderr
        return self.stderr[-2000:] if bad else ""


def canonical(finding: dict[str, Any]) -> dict[str, Any]:
    """A JSON finding as the differential compares it."""
    fix = finding.get("fix")
    return {
        "code": finding["code"],
        "filename": finding["filename"],
        "row": finding["location"]["row"],
        "col": finding["location"]["column"],
        "end_row": finding["end_location"]["row"],
        "end_col": finding["end_location"]["column"],
        "confidence": finding.get("confidence"),
        "context": finding.get("context"),
        "message": finding["message"],
        "because": finding.get("because"),
        "fix": None if fix is None else {
            "applicability": fix.get("applicability"),
            "message": fix.get("message"),
            "edits": [[e["content"], e["location"]["row"], e["location"]["column"], e["end_location"]["row"],
                       e["end_location"]["column"]] for e in fix.get("edits", [])],
        },
    }


def sort_key(record: dict[str, Any]) -> tuple:
    return (record["filename"], record["row"], record["col"], record["end_row"], record["end_col"], record["code"],
            json.dumps(record, sort_keys=True))


def run_synclint(python: str, tree: Tree, args: Sequence[str], stdin: bytes | None = None,
                 timeout: float | None = None) -> Run:
    with tempfile.TemporaryDirectory(prefix="differential-log-") as folder:
        log = Path(folder) / "analyses"
        env = {**os.environ, LOG_VARIABLE: str(log), "NO_COLOR": "1"}
        start = time.perf_counter()
        proc = subprocess.run([python, "-P", "-c", DRIVER, *BASE_ARGS, *args], cwd=tree.cwd, env=env,
                              input=stdin if stdin is not None else b"", capture_output=True, timeout=timeout)
        wall = time.perf_counter() - start
        lines = log.read_bytes().decode("utf-8", "surrogateescape").splitlines() if log.exists() else []
    analyses: Counter[str] = Counter()
    pids = set()
    for line in lines:
        pid, _, relpath = line.partition("\t")
        pids.add(pid)
        analyses[relpath] += 1
    stdout = proc.stdout.decode("utf-8", "surrogateescape")
    stderr = proc.stderr.decode("utf-8", "surrogateescape")
    try:
        findings = json.loads(stdout) if stdout.strip() else []
    except json.JSONDecodeError:
        findings, stderr = [], stderr + "\n[differential] standard output is not JSON:\n" + stdout[-2000:]
    records = sorted((canonical(f) for f in findings), key=sort_key)
    return Run(records, proc.returncode, wall, analyses, len(pids), stderr)


def drop_replays(cache: Path) -> None:
    """Forget the recorded runs (synclint.cache.replay), keeping each file's cached result."""
    for folder in cache.glob("v*/replay"):
        shutil.rmtree(folder)


def whole_modes(tree: Tree, modes: Sequence[str], jobs: int, many: int) -> Iterable[tuple[str, list[str]]]:
    """(mode, arguments) of the whole-tree modes asked, in the order they must run."""
    for mode, args in (("cold", ["--no-cache", "--jobs", str(jobs)]), ("j1", ["--no-cache", "--jobs", "1"]),
                       ("jN", ["--no-cache", "--jobs", str(many)])):
        if mode in modes:
            yield mode, [*args, tree.path.name]


def mode_entry(run: Run) -> dict[str, Any]:
    return {"wall": round(run.wall, 3), "returncode": run.returncode, "records": run.records,
            "analyses": dict(sorted(run.analyses.items())), "processes": run.processes, "problems": run.problems()}


def snapshot_tree(python: str, tree: Tree, modes: Sequence[str], jobs: int, many: int, sample: int | None,
                  seed: int, timeout: float | None, only: Sequence[str] = ()) -> dict[str, Any]:
    files = tree.files()
    entry: dict[str, Any] = {"path": str(tree.path), "digest": tree.digest(), "files": len(files), "modes": {}}

    def note(mode: str, run: Run, what: str = "") -> None:
        print(f"  {tree.label} {mode}{what}: {run.wall:.1f} s, {len(run.records)} findings, "
              f"{sum(run.analyses.values())} analyses, rc {run.returncode}", file=sys.stderr, flush=True)

    for mode, args in whole_modes(tree, modes, jobs, many):
        run = run_synclint(python, tree, args, timeout=timeout)
        note(mode, run)
        entry["modes"][mode] = mode_entry(run)
    if {"fill", "warm", "cached"} & set(modes):
        with tempfile.TemporaryDirectory(prefix="differential-cache-") as cache:
            args = ["--cache-dir", cache, "--jobs", str(jobs), tree.path.name]
            for mode in ("fill", "warm", "cached"):
                if mode == "cached":
                    drop_replays(Path(cache))
                run = run_synclint(python, tree, args, timeout=timeout)
                note(mode, run)
                if mode in modes or mode == "fill":
                    entry["modes"][mode] = mode_entry(run)
                if mode == "warm" and "cached" not in modes:
                    break
    if set(PER_FILE_MODES) & set(modes):
        if only:
            chosen = list(only)
        else:
            chosen = files if sample is None or sample >= len(files) else sorted(random.Random(seed).sample(files, sample))
        entry["sample"] = {"seed": None if only else seed, "files": chosen}
        for mode in PER_FILE_MODES:
            if mode not in modes:
                continue
            runs: list[dict[str, Any]] = []
            records: list[dict[str, Any]] = []
            analyses: Counter[str] = Counter()
            wall = 0.0
            for name in chosen:
                if mode == "alone":
                    run = run_synclint(python, tree, ["--no-cache", "--jobs", str(jobs), name], timeout=timeout)
                else:
                    run = run_synclint(python, tree, ["--no-cache", "--jobs", str(jobs), "--stdin-filename", name, "-"],
                                       stdin=(tree.cwd / name).read_bytes(), timeout=timeout)
                if len(chosen) <= 40 or run.wall > 5:
                    note(mode, run, f" {name}")
                records.extend(run.records)
                analyses.update(run.analyses)
                wall += run.wall
                runs.append({"file": name, "wall": round(run.wall, 3), "returncode": run.returncode,
                             "findings": len(run.records), "analyses": sum(run.analyses.values()),
                             "analysed_files": len(run.analyses), "of_itself": run.analyses[name],
                             "processes": run.processes, "problems": run.problems()})
            entry["modes"][mode] = {"wall": round(wall, 3), "records": sorted(records, key=sort_key),
                                    "analyses": dict(sorted(analyses.items())), "runs": runs,
                                    "returncode": max((r["returncode"] for r in runs), default=0),
                                    "problems": "\n".join(r["problems"] for r in runs if r["problems"])}
    return entry


def synclint_info(python: str) -> dict[str, Any]:
    """Where `python` imports synclint from, and that checkout's commit when it is a git checkout."""
    proc = subprocess.run([python, "-P", "-c", "import synclint, os; print(os.path.dirname(synclint.__file__)); "
                           "print(synclint.__version__)"], capture_output=True, text=True)
    info: dict[str, Any] = {"python": python, "path": None, "version": None, "commit": None, "source_commit": None,
                            "dirty": None}
    if proc.returncode != 0:
        raise SystemExit(f"differential: {python} cannot import synclint:\n{proc.stderr}")
    info["path"], info["version"] = proc.stdout.split("\n")[:2]
    git = ["git", "-C", info["path"]]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    if commit.returncode == 0:
        info["commit"] = commit.stdout.strip()
        # The last commit that changed synclint's sources: a branch of bench scripts keeps its code's.
        last = subprocess.run([*git, "log", "-1", "--format=%H", "--", ".", "../rules"], capture_output=True, text=True)
        info["source_commit"] = last.stdout.strip() or None
        status = subprocess.run([*git, "status", "--porcelain", "--", ".", "../rules"], capture_output=True, text=True)
        info["dirty"] = bool(status.stdout.strip())
    with tempfile.TemporaryDirectory() as elsewhere:  # not a checkout's folder: its synclint would win
        info["fingerprint"] = source_fingerprint(python, Path(elsewhere))
    return info


# --- reading snapshots --------------------------------------------------------------------------


def place(record: dict[str, Any]) -> tuple:
    return (record["code"], record["filename"], record["row"], record["col"])


def frozen(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True)


def changed_fields(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    ends = lambda r: (r["end_row"], r["end_col"])  # noqa: E731
    return [name for name in FIELDS if (ends(a) != ends(b) if name == "end" else a[name] != b[name])]


@dataclass
class Diff:
    """How the records of B differ from those of A."""

    added: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    changed: list[tuple[dict[str, Any], dict[str, Any], list[str]]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def files(self) -> list[str]:
        return sorted({r["filename"] for r in self.added + self.removed} | {a["filename"] for a, _, _ in self.changed})

    def signature(self) -> str:
        return json.dumps([self.added, self.removed, self.changed], sort_keys=True)

    def short(self) -> str:
        return f"+{len(self.added)} -{len(self.removed)} ~{len(self.changed)}"


def diff(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> Diff:
    left = Counter(frozen(r) for r in a)
    right = Counter(frozen(r) for r in b)
    only_a = [json.loads(r) for r in sorted((left - right).elements())]
    only_b = [json.loads(r) for r in sorted((right - left).elements())]
    by_place_a: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    by_place_b: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in only_a:
        by_place_a[place(r)].append(r)
    for r in only_b:
        by_place_b[place(r)].append(r)
    result = Diff()
    for key in sorted(set(by_place_a) | set(by_place_b), key=repr):
        olds, news = by_place_a.get(key, []), by_place_b.get(key, [])
        for old, new in zip(olds, news):
            result.changed.append((old, new, changed_fields(old, new)))
        result.removed.extend(olds[len(news):])
        result.added.extend(news[len(olds):])
    return result


def per_file_diff(cold: Sequence[dict[str, Any]], entry: dict[str, Any]) -> dict[str, Diff]:
    """A per-file mode against the whole-tree run, file by file of its sample."""
    files = entry.get("files") or [run["file"] for run in entry.get("runs", [])]
    mine: dict[str, list[dict[str, Any]]] = defaultdict(list)
    theirs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in cold:
        theirs[r["filename"]].append(r)
    for r in entry["records"]:
        mine[r["filename"]].append(r)
    out = {}
    for name in sorted(set(files) | set(mine)):
        d = diff(theirs.get(name, []), mine.get(name, []))
        if d:
            out[name] = d
    return out


def agreement(tree: dict[str, Any]) -> list[tuple[str, str, dict[str, Diff]]]:
    """(mode, verdict, the diff of each file that differs) of every mode against `cold` in one
    snapshot's tree; a per-file mode is compared file by file of its sample."""
    modes = tree["modes"]
    if "cold" not in modes:
        return []
    cold = modes["cold"]["records"]
    rows = []
    for mode, entry in modes.items():
        if mode == "cold":
            continue
        if mode in PER_FILE_MODES:
            diffs = per_file_diff(cold, {**entry, "files": [run["file"] for run in entry["runs"]]})
            n = len(entry["runs"])
            verdict = f"equal ({n} files)" if not diffs else f"{len(diffs)} of {n} files differ"
        else:
            whole = diff(cold, entry["records"])
            diffs = per_file_diff(cold, {"records": entry["records"], "files": whole.files()})
            verdict = "equal" if not whole else f"{whole.short()} in {len(diffs)} files"
        rows.append((mode, verdict, diffs))
    return rows


def merged(diffs: Iterable[Diff]) -> Diff:
    out = Diff()
    for d in diffs:
        out.added += d.added
        out.removed += d.removed
        out.changed += d.changed
    return out


def kinds(d: Diff) -> Counter[tuple[str, str]]:
    """(rule, kind of change) counts."""
    counts: Counter[tuple[str, str]] = Counter()
    for r in d.added:
        counts[(r["code"], "added")] += 1
    for r in d.removed:
        counts[(r["code"], "removed")] += 1
    for old, _, names in d.changed:
        counts[(old["code"], "changed " + "+".join(names))] += 1
    return counts


def describe(record: dict[str, Any]) -> str:
    return (f"{record['filename']}:{record['row']}:{record['col']} {record['code']} {record['confidence']} "
            f"[{record['context']}] {record['message'][:160]}")


def show_examples(d: Diff, show: int) -> None:
    if show <= 0:
        return
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in d.added:
        groups[(r["code"], "added")].append("+ " + describe(r))
    for r in d.removed:
        groups[(r["code"], "removed")].append("- " + describe(r))
    for old, new, names in d.changed:
        lines = [f"~ {describe(old)}"]
        for name in names:
            if name == "end":
                lines.append(f"    end: {old['end_row']}:{old['end_col']} -> {new['end_row']}:{new['end_col']}")
            else:
                lines.append(f"    {name}: {json.dumps(old[name])[:300]}\n      -> {json.dumps(new[name])[:300]}")
        groups[(old["code"], "changed " + "+".join(names))].append("\n".join(lines))
    for (code, kind), examples in sorted(groups.items()):
        print(f"  {code} {kind} ({len(examples)}):")
        for example in examples[:show]:
            print("    " + example.replace("\n", "\n    "))


def load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as stream:
        data: dict[str, Any] = json.load(stream)
    if data.get("format") != FORMAT:
        raise SystemExit(f"differential: {path} is not a snapshot of format {FORMAT}")
    return data


def describe_snapshot(name: str, data: dict[str, Any]) -> str:
    info = data.get("synclint", {})
    commit = (info.get("commit") or "no commit")[:12] + (" (dirty)" if info.get("dirty") else "")
    source = info.get("source_commit")
    if source and info.get("commit") != source:
        commit += f", sources last changed in {source[:12]}"
    return f"{name}: synclint {commit}, sources {info.get('fingerprint')}, {data.get('created')}"


# --- printing -----------------------------------------------------------------------------------


def print_tree_summary(label: str, tree: dict[str, Any]) -> None:
    rows = []
    for mode, entry in tree["modes"].items():
        analyses = entry.get("analyses", {})
        problems = "yes" if entry.get("problems") else ""
        rows.append((mode, f"{entry['wall']:.1f}", len(entry["records"]), sum(analyses.values()), len(analyses),
                     max(analyses.values(), default=0), entry.get("processes", ""), entry["returncode"], problems))
    print(f"\n{label}: {tree['files']} files, digest {tree['digest']}")
    print(table(("mode", "wall s", "findings", "analyses", "files analysed", "max/file", "processes", "rc",
                 "problems"), rows))
    by_confidence = Counter(r["confidence"] for r in tree["modes"].get("cold", {}).get("records", []))
    if by_confidence:
        print("cold findings by confidence: " + ", ".join(f"{c} {n}" for c, n in sorted(by_confidence.items())))
    cold = tree["modes"].get("cold")
    if cold is not None:
        analyses = Counter(cold["analyses"])
        total = sum(analyses.values())
        print(f"cold analyses: {tree['files']} files, {len(analyses)} analysed, {total} analyses "
              f"({total / max(tree['files'], 1):.2f} per file), at most {max(analyses.values(), default=0)} of one file, "
              f"{sum(1 for n in analyses.values() if n > 1)} files analysed more than once")
        top = [(name, n) for name, n in analyses.most_common(10) if n > 1]
        if top:
            print(table(("most analysed (cold)", "analyses"), top))
    for mode in PER_FILE_MODES:
        entry = tree["modes"].get(mode)
        if entry is not None and len(entry["runs"]) <= 40:
            print(table((f"{mode}: file", "wall s", "findings", "analyses", "files analysed", "of itself", "rc"),
                        [(r["file"], f"{r['wall']:.1f}", r["findings"], r["analyses"], r["analysed_files"],
                          r["of_itself"], r["returncode"]) for r in entry["runs"]]))
    for mode, entry in tree["modes"].items():
        if entry.get("problems"):
            print(f"{mode}: exit code or traceback:\n{entry['problems'][-1500:]}")


def print_agreement(name: str, label: str, tree: dict[str, Any], show: int, files: int = 40) -> bool:
    """Each mode against cold; for a mode that differs, its files and up to `show` examples."""
    rows = agreement(tree)
    if not rows:
        return True
    print(table((f"{name} {label}: mode vs cold", "verdict"), [(mode, verdict) for mode, verdict, _ in rows]))
    for mode, _, diffs in rows:
        if diffs:
            print(f"{mode} differs from cold in {len(diffs)} files (+added -removed ~changed):")
            for name, d in list(diffs.items())[:files]:
                print(f"  {name} {d.short()}")
            if len(diffs) > files:
                print(f"  ... and {len(diffs) - files} more")
            if show > 0:
                print(table(("rule", "kind", "count"), [(c, k, n) for (c, k), n in sorted(kinds(merged(diffs.values())).items())],
                            left=2))
                show_examples(merged(diffs.values()), show)
    return all(not diffs for _, _, diffs in rows)


# --- commands -----------------------------------------------------------------------------------


def cmd_snapshot(args: argparse.Namespace) -> int:
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - set(MODES)
    if unknown:
        raise SystemExit(f"differential: unknown modes {sorted(unknown)}; choose from {', '.join(MODES)}")
    python = args.python
    info = synclint_info(python)
    out = Path(args.out)
    data: dict[str, Any] = {"format": FORMAT, "created": None, "synclint": info, "trees": {}, "runs": []}
    if args.append and out.exists():
        data = load(str(out))
        if data["synclint"].get("fingerprint") != info["fingerprint"]:
            print(f"differential: {out} was taken with other synclint sources ({data['synclint'].get('fingerprint')} "
                  f"!= {info['fingerprint']})", file=sys.stderr)
    data["created"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    data.setdefault("runs", []).append({"argv": sys.argv[1:], "created": data["created"], "synclint": info})
    print(describe_snapshot(str(out), data), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="differential-trees-") as folder:
        trees = [parse_tree(spec) for spec in args.tree]
        if args.small:
            trees = small_trees(Path(folder)) + trees
        labels = Counter(t.label for t in trees)
        if any(n > 1 for n in labels.values()):
            raise SystemExit(f"differential: two trees share a label ({labels.most_common(1)[0][0]}): name them LABEL=DIR")
        for tree in trees:
            data["trees"][tree.label] = snapshot_tree(python, tree, modes, args.jobs, args.many_jobs, args.alone_sample,
                                                      args.seed, args.timeout, args.files)
            data["trees"][tree.label]["modes_asked"] = modes
            tmp = out.with_name(out.name + ".tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(out)  # after each tree: a long run keeps what it did
    if args.end_fingerprint:
        end = synclint_info(python)["fingerprint"]
        if end != info["fingerprint"]:
            print(f"differential: synclint's sources changed during the run ({info['fingerprint']} -> {end})")
    print(describe_snapshot(str(out), data))
    for tree in trees:
        print_tree_summary(tree.label, data["trees"][tree.label])
    print()
    for tree in trees:
        agree = print_agreement("snapshot", tree.label, data["trees"][tree.label], args.show)
        alone = set(data["trees"][tree.label]["modes"]) <= {"cold"}
        print(f"verdict {tree.label}: "
              f"{'cold only' if alone else 'every mode equals cold' if agree else 'modes DIFFER from cold'}\n")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    a = load(args.a)
    b = load(args.b) if args.b else None
    print(describe_snapshot("A", a))
    if b is not None:
        print(describe_snapshot("B", b))
    verdicts = []
    for label in sorted(set(a["trees"]) | set(b["trees"] if b else ())):
        tree_a = a["trees"].get(label)
        tree_b = b["trees"].get(label) if b else None
        print(f"\n=== {label}")
        parts = []
        if b is not None:
            if tree_a is None or tree_b is None:
                parts.append(f"only in {'B' if tree_a is None else 'A'}")
            else:
                if tree_a["digest"] != tree_b["digest"]:
                    print(f"warning: the tree's files differ ({tree_a['digest']} != {tree_b['digest']})")
                    parts.append("other files")
                rows, changes = [], []
                for mode in [m for m in tree_a["modes"] if m in tree_b["modes"]]:
                    ra, rb = tree_a["modes"][mode]["records"], tree_b["modes"][mode]["records"]
                    if mode in PER_FILE_MODES:  # compare only the files both sampled
                        files = ({r["file"] for r in tree_a["modes"][mode]["runs"]}
                                 & {r["file"] for r in tree_b["modes"][mode]["runs"]})
                        ra = [r for r in ra if r["filename"] in files]
                        rb = [r for r in rb if r["filename"] in files]
                    d = diff(ra, rb)
                    rows.append((mode, len(ra), len(rb), len(d.added), len(d.removed), len(d.changed), len(d.files()),
                                 f"{tree_a['modes'][mode]['wall']:.1f}", f"{tree_b['modes'][mode]['wall']:.1f}",
                                 sum(tree_a["modes"][mode].get("analyses", {}).values()),
                                 sum(tree_b["modes"][mode].get("analyses", {}).values())))
                    if d:
                        changes.append((mode, d))
                print(table(("mode", "in A", "in B", "added", "removed", "changed", "files", "wall A", "wall B",
                             "analyses A", "analyses B"), rows))
                alike: dict[str, list[tuple[str, Diff]]] = defaultdict(list)  # modes with the same change, shown once
                for mode, d in changes:
                    alike[d.signature()].append((mode, d))
                for group in alike.values():
                    d = group[0][1]
                    print(f"\n{', '.join(mode for mode, _ in group)}: by rule and kind of change")
                    print(table(("rule", "kind", "count"), [(c, k, n) for (c, k), n in sorted(kinds(d).items())], left=2))
                    show_examples(d, args.show)
                parts.append("B equals A in every mode" if not changes
                             else "B differs from A in " + ", ".join(f"{m} {d.short()}" for m, d in changes))
        for name, tree in (("A", tree_a), ("B", tree_b)):
            if tree is not None:
                agree = print_agreement(name, label, tree, args.show)
                if "cold" in tree["modes"] and len(tree["modes"]) > 1:
                    parts.append(f"{name}'s modes {'agree' if agree else 'DIFFER'}")
        verdicts.append(f"verdict {label}: " + ("; ".join(parts) or "cold only"))
    print()
    print("\n".join(verdicts))
    return 0


def merge_per_file(into: dict[str, Any], other: dict[str, Any]) -> int:
    """Take into a per-file mode the runs of `other` for files it lacks or whose run failed (an
    ended run has a negative exit code), with those files' records; how many it took."""
    mine = {run["file"]: run for run in into["runs"]}
    taken = 0
    for run in other["runs"]:
        old = mine.get(run["file"])
        if run["returncode"] != 0 or (old is not None and old["returncode"] == 0):
            continue
        if old is not None:
            if old["analyses"]:
                print(f"merge: the failed run of {old['file']} counted {old['analyses']} analyses; they stay in the "
                      "mode's analyses per file", file=sys.stderr)
            into["runs"].remove(old)
            into["wall"] = round(into["wall"] - old["wall"], 3)
        into["runs"].append(run)
        into["records"] = [r for r in into["records"] if r["filename"] != run["file"]]
        into["records"] += [r for r in other["records"] if r["filename"] == run["file"]]
        into["wall"] = round(into["wall"] + run["wall"], 3)
        taken += 1
    if taken:
        if taken < len(other["runs"]):
            print("merge: a part's analyses per file are added up over all its runs, also those not taken",
                  file=sys.stderr)
        analyses = Counter(into["analyses"])
        analyses.update(other["analyses"])  # a mode's analyses are those of all its runs, added up
        into["analyses"] = dict(sorted(analyses.items()))
        into["runs"].sort(key=lambda run: run["file"])
        into["records"].sort(key=sort_key)
        into["returncode"] = max((run["returncode"] for run in into["runs"]), key=abs, default=0)
        into["problems"] = "\n".join(run["problems"] for run in into["runs"] if run["problems"])
    return taken


def cmd_merge(args: argparse.Namespace) -> int:
    """Snapshots of one synclint taken in parts (trees, modes, or a per-file sample split over processes)."""
    out = load(args.inputs[0])
    for path in args.inputs[1:]:
        other = load(path)
        if other["synclint"].get("fingerprint") != out["synclint"].get("fingerprint"):
            raise SystemExit(f"merge: {path} was taken with other synclint sources")
        out.setdefault("runs", []).extend(other.get("runs", []))
        for label, tree in other["trees"].items():
            if label not in out["trees"]:
                out["trees"][label] = tree
                continue
            mine = out["trees"][label]
            if mine["digest"] != tree["digest"]:
                raise SystemExit(f"merge: {label} has other files in {path}")
            for mode, entry in tree["modes"].items():
                if mode not in mine["modes"]:
                    mine["modes"][mode] = entry
                elif mode in PER_FILE_MODES:
                    print(f"merge: {label} {mode}: {merge_per_file(mine['modes'][mode], entry)} runs from {path}")
            if "sample" in tree:
                sample = mine.setdefault("sample", {"seed": None, "files": []})
                sample["files"] = sorted(set(sample["files"]) | set(tree["sample"]["files"]))
    out["merged"] = list(args.inputs)
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(describe_snapshot(args.out, out))
    return 0


def cmd_trees(args: argparse.Namespace) -> int:
    out = Path(args.dir)
    module = small_trees_module()
    for label in module.TREES:
        print(module.build(label, out / label.replace("/", "-")))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    snap = commands.add_parser("snapshot", help="run synclint over trees in several modes into a JSON file")
    snap.add_argument("--tree", action="append", default=[], metavar="[LABEL=]DIR",
                      help="a package folder to check (label: its name unless given)")
    snap.add_argument("--small", action="store_true",
                      help="add fixtures/ and the package trees of tests/trees.py (built in a temporary folder)")
    snap.add_argument("--out", required=True, metavar="FILE.json")
    snap.add_argument("--append", action="store_true", help="add the trees to FILE.json (a tree there is replaced)")
    snap.add_argument("--python", default=sys.executable, help="the interpreter that has synclint")
    snap.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, of {', '.join(MODES)}")
    snap.add_argument("--jobs", type=int, default=2, help="processes of cold, fill, warm, cached, alone, stdin")
    snap.add_argument("--many-jobs", type=int, default=4, help="processes of jN")
    snap.add_argument("--alone-sample", type=int, default=None, metavar="N",
                      help="check N files alone and on standard input (default: every file)")
    snap.add_argument("--seed", type=int, default=33)
    snap.add_argument("--files", nargs="+", default=(), metavar="PATH",
                      help="check these files (relative to the tree's parent) alone and on standard input, not a sample")
    snap.add_argument("--timeout", type=float, default=None, help="seconds one synclint command may take")
    snap.add_argument("--end-fingerprint", action="store_true",
                      help="hash synclint's sources again at the end and say if they changed during the run")
    snap.add_argument("--show", type=int, default=2, help="examples per rule and kind of a mode's difference")
    snap.set_defaults(run=cmd_snapshot)
    comp = commands.add_parser("compare", help="findings of snapshot B against A, and each snapshot's modes")
    comp.add_argument("a", metavar="A.json")
    comp.add_argument("b", metavar="B.json", nargs="?")
    comp.add_argument("--show", type=int, default=3, help="examples per rule and kind of change")
    comp.set_defaults(run=cmd_compare)
    merge = commands.add_parser("merge", help="one snapshot from parts taken with the same synclint")
    merge.add_argument("inputs", nargs="+", metavar="PART.json")
    merge.add_argument("--out", required=True, metavar="FILE.json")
    merge.set_defaults(run=cmd_merge)
    trees = commands.add_parser("trees", help="write the small trees of tests/trees.py under DIR")
    trees.add_argument("dir", metavar="DIR")
    trees.set_defaults(run=cmd_trees)
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
