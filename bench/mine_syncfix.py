#!/usr/bin/env python3
"""Lists commits that may have removed a GPU->CPU sync, for a human to read; checks a corpus.

What it does: walks the history of git mirrors (bare clones laid out as
`<mirrors>/<owner>+<name>/repo`, as the `fetch` tool and `score_sites.py --mirrors` have them)
and, for each non-merge commit that touches Python files, counts on the removed (-) and added (+)
lines of its diff the patterns a reader would grep for after learning what syncs:

    .item()  .tolist()  .cpu()  .numpy()  float(x)/int(x)/bool(x)  if/while ...any()/all()
    torch.tensor(..., device=)  nonzero  synchronize()  .to(/.cuda( without non_blocking
    unique / masked_select / repeat_interleave without output_size

and matches the subject and body against words such as sync, synchronize, item(), non_blocking,
d2h, host-device, cpu-gpu, graph break. A commit is a candidate when its message matches or its
diff removes more of these patterns than it adds (or adds `non_blocking`). The table shows, per
candidate, the repository, the short SHA, the subject, how many pattern hits the diff removed and
added (per pattern in the last column) and which message words matched.

It decides nothing: most candidates are refactors, test edits or CPU-only code. A site goes into
the corpus only after someone has read the diff and the parent code around it and judged that the
removed line made the host wait on a CUDA tensor (see ../shared/reference/sync-catalogue.md).

Usage:
    python bench/mine_syncfix.py --mirrors /work/.mirror                       # all mirrors
    python bench/mine_syncfix.py --mirrors /work/.mirror --repo huggingface/accelerate
    python bench/mine_syncfix.py --mirrors /work/.mirror --min-net 2 --no-tests --since 2022-01-01
    python bench/mine_syncfix.py --check bench/corpus/syncfix_public.jsonl --mirrors /work/.mirror

`--check FILE` validates a corpus instead: full SHAs, the parent really is the fix's first parent,
both files exist, line ranges inside the files, unique ids, known categories and splits; and it
prints each site's before lines (and after lines with `--after`) so a reviewer can eyeball them.
Exit status 1 when a check fails.

Stdlib only.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

# Patterns counted on the - and + lines of each diff hunk (comments skipped).
DIFF_PATTERNS: dict[str, re.Pattern[str]] = {
    "item": re.compile(r"\.item\(\)"),
    "tolist": re.compile(r"\.tolist\(\)"),
    "cpu": re.compile(r"\.cpu\(\)"),
    "numpy": re.compile(r"\.numpy\(\)"),
    # float(x) / int(x) / bool(x) with something that is not a literal or a len()/str() inside
    "cast": re.compile(r"(?<![\w.])(?:float|int|bool)\((?![\"'\d)\-]|len\(|str\(|os\.|math\.)"),
    "if-any": re.compile(r"^\s*(?:if|elif|while|assert)\b.*(?:\.any\(\)|\.all\(\)|torch\.(?:any|all|isnan|isinf)\()"),
    "tensor-dev": re.compile(r"\btorch\.(?:tensor|as_tensor|LongTensor|Tensor|FloatTensor)\(.*device"),
    "nonzero": re.compile(r"\b(?:nonzero|argwhere|masked_select)\(|\bunique(?:_consecutive)?\("),
    "sync": re.compile(r"\bsynchronize\(\)|\.wait\(\)"),
    "to-block": re.compile(r"\.(?:to|cuda)\("),
    "rep-int": re.compile(r"\brepeat_interleave\("),
}
NON_BLOCKING = re.compile(r"non_blocking\s*=\s*True|pin_memory")
COMMENT = re.compile(r"^\s*#")

MESSAGE_WORDS = re.compile(
    r"\bsync(?:s|ed|ing|hroni[sz]\w*)?\b|\.item\(|\bitem\(\)|non[_-]?blocking|\bd2h\b|\bh2d\b|"
    r"host[- ]device|device[- ]host|cpu[- ]gpu|gpu[- ]cpu|graph[- ]break|\btolist\b|"
    r"pin(?:ned)?[_ ]memory|cuda ?graph|avoid .*\bcpu\b|\bstall",
    re.IGNORECASE,
)
TEST_PATH = re.compile(r"(?:^|/)(?:tests?|testing|benchmarks?|examples?|docs?)(?:/|$)|(?:^|/)test_[^/]*\.py$|_test\.py$")

CATEGORIES = {
    "blocking-to", "tensor-from-host-to-device", "scalar-write", "explicit-host-read", "cond-reduction",
    "data-dependent-shape", "sync-property", "explicit-synchronize", "list-index-scan", "other",
}
SPLITS = {"dev", "test"}
REQUIRED = ("id", "repo", "parent_commit", "fix_commit", "pr", "title", "path", "before_lines",
            "after_lines", "category", "seed", "note", "split")
SHA40 = re.compile(r"^[0-9a-f]{40}$")


def git(git_dir: str, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True,
                          errors="replace")
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()[:300]}")
    return proc.stdout


def git_blob(git_dir: str, sha: str, path: str) -> str | None:
    proc = subprocess.run(["git", "--git-dir", git_dir, "show", f"{sha}:{path}"], capture_output=True,
                          text=True, errors="replace")
    return proc.stdout if proc.returncode == 0 else None


def find_git_dir(mirrors: str, repo: str) -> str | None:
    base = os.path.join(mirrors, repo.replace("/", "+"))
    for cand in (os.path.join(base, "repo", ".git"), os.path.join(base, "repo"), base):
        if os.path.isfile(os.path.join(cand, "HEAD")) and os.path.isdir(os.path.join(cand, "objects")):
            return cand
    return None


@dataclass
class Commit:
    repo: str
    sha: str
    date: str
    subject: str
    body: str = ""
    removed: collections.Counter = field(default_factory=collections.Counter)
    added: collections.Counter = field(default_factory=collections.Counter)
    nb_added: int = 0
    files: set = field(default_factory=set)

    @property
    def net(self) -> int:
        return sum(self.removed.values()) - sum(self.added.values())

    def words(self) -> list[str]:
        return sorted({m.group(0).lower() for m in MESSAGE_WORDS.finditer(self.subject + "\n" + self.body)})


def count_line(line: str, counter: collections.Counter) -> None:
    if COMMENT.match(line):
        return
    for name, pat in DIFF_PATTERNS.items():
        if name == "to-block" and "non_blocking" in line:
            continue
        n = len(pat.findall(line))
        if n:
            counter[name] += n


START = "\x1e@@commit@@"


def walk(git_dir: str, repo: str, since: str | None, no_tests: bool, max_files: int) -> list[Commit]:
    """One `git log -p -U0` over the Python files, parsed as it streams."""
    cmd = ["git", "--git-dir", git_dir, "log", "--no-merges", "-p", "-U0", "--no-color", "--no-renames",
           f"--format={START}%H%x1f%ad%x1f%s%x1f%b%x1f", "--date=short"]
    if since:
        cmd.append(f"--since={since}")
    cmd += ["--", "*.py"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, errors="replace", bufsize=1 << 20)
    assert proc.stdout is not None
    commits: list[Commit] = []
    cur: Commit | None = None
    header: list[str] = []
    in_header = False
    skip_file = False
    for line in proc.stdout:
        if line.startswith(START):
            if cur is not None:
                commits.append(cur)
            header = [line[len(START):]]
            in_header = True
            cur = None
            if header[0].count("\x1f") >= 4:
                in_header = False
                cur = _make(repo, header)
            continue
        if in_header:
            header.append(line)
            if "".join(header).count("\x1f") >= 4:
                in_header = False
                cur = _make(repo, header)
            continue
        if cur is None:
            continue
        if line.startswith("diff --git "):
            path = line.rstrip("\n").split(" b/", 1)[-1]
            skip_file = bool(no_tests and TEST_PATH.search(path))
            if not skip_file:
                cur.files.add(path)
            continue
        if skip_file or line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            count_line(line[1:], cur.removed)
        elif line.startswith("+"):
            count_line(line[1:], cur.added)
            if NON_BLOCKING.search(line):
                cur.nb_added += 1
    if cur is not None:
        commits.append(cur)
    proc.wait()
    return [c for c in commits if c.files and len(c.files) <= max_files]


def _make(repo: str, header: list[str]) -> Commit:
    sha, date, subject, body, _rest = "".join(header).split("\x1f", 4)
    return Commit(repo=repo, sha=sha.strip(), date=date, subject=subject.strip(), body=body.strip())


def fmt_counts(c: Commit) -> str:
    keys = sorted(set(c.removed) | set(c.added))
    parts = [f"{k}:-{c.removed[k]}/+{c.added[k]}" for k in keys if c.removed[k] != c.added[k]]
    if c.nb_added:
        parts.append(f"+non_blocking/pin:{c.nb_added}")
    return " ".join(parts)


def table(headers: list[str], rows: list[list[object]]) -> str:
    cells = [headers] + [[str(x) for x in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)).rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells[1:]]
    return "\n".join(out)


def list_repos(mirrors: str) -> list[str]:
    repos = []
    for name in sorted(os.listdir(mirrors)):
        if "+" in name and find_git_dir(mirrors, name.replace("+", "/", 1)):
            repos.append(name.replace("+", "/", 1))
    return repos


def mine(args: argparse.Namespace) -> int:
    repos = args.repo or list_repos(args.mirrors)
    rows = []
    for repo in repos:
        gd = find_git_dir(args.mirrors, repo)
        if not gd:
            print(f"# no mirror for {repo}", file=sys.stderr)
            continue
        commits = walk(gd, repo, args.since, args.no_tests, args.max_files)
        kept = 0
        for c in commits:
            words = c.words()
            by_diff = c.net >= args.min_net or (c.nb_added and c.net >= 0 and sum(c.removed.values()) > 0)
            by_msg = bool(words) and (sum(c.removed.values()) > 0 or c.nb_added > 0)
            if args.message_only:
                ok = bool(words)
            elif args.diff_only:
                ok = by_diff
            else:
                ok = by_diff or by_msg
            if not ok:
                continue
            kept += 1
            subj = c.subject if len(c.subject) <= args.width else c.subject[: args.width - 1] + "…"
            rows.append([repo, c.sha[:10], c.date, subj, sum(c.removed.values()), sum(c.added.values()),
                         ",".join(words), fmt_counts(c)])
        print(f"# {repo}: {len(commits)} commits touching .py, {kept} candidates", file=sys.stderr)
    rows.sort(key=lambda r: (r[0], r[2]), reverse=False)
    print(table(["repo", "sha", "date", "subject", "-hits", "+hits", "message words", "per pattern -removed/+added"], rows))
    print(f"\n{len(rows)} candidates")
    return 0


def check(args: argparse.Namespace) -> int:
    bad = 0
    seen: set[str] = set()
    per_repo: collections.Counter = collections.Counter()
    per_cat: collections.Counter = collections.Counter()
    per_split: collections.Counter = collections.Counter()
    split_of_repo: dict[str, set] = collections.defaultdict(set)
    parent_ok: dict[tuple[str, str], bool] = {}
    with open(args.check) as fh:
        records = [(n, json.loads(line)) for n, line in enumerate(fh, 1) if line.strip()]

    def fail(rec_id: str, msg: str) -> None:
        nonlocal bad
        bad += 1
        print(f"  !! {rec_id}: {msg}")

    for n, r in records:
        rid = r.get("id", f"line{n}")
        print(f"== {rid}  [{r.get('category')}] [{r.get('split')}]  {r.get('repo')} {r.get('fix_commit', '')[:10]}  {r.get('path')}")
        print(f"   note: {r.get('note')}")
        for key in REQUIRED:
            if key not in r:
                fail(rid, f"missing field {key}")
        if rid in seen:
            fail(rid, "duplicate id")
        seen.add(rid)
        if r.get("category") not in CATEGORIES:
            fail(rid, f"unknown category {r.get('category')}")
        if r.get("split") not in SPLITS:
            fail(rid, f"unknown split {r.get('split')}")
        if r.get("seed") is not False:
            fail(rid, "seed must be false")
        per_repo[r.get("repo")] += 1
        per_cat[r.get("category")] += 1
        per_split[r.get("split")] += 1
        split_of_repo[r.get("repo")].add(r.get("split"))
        p, f = r.get("parent_commit", ""), r.get("fix_commit", "")
        if not (SHA40.match(p or "") and SHA40.match(f or "")):
            fail(rid, "parent_commit/fix_commit must be full 40-hex SHAs")
            continue
        gd = find_git_dir(args.mirrors, r["repo"])
        if not gd:
            fail(rid, f"no mirror for {r['repo']}")
            continue
        if (p, f) not in parent_ok:
            first = git(gd, "rev-parse", f"{f}^1", check=False).strip()
            parent_ok[(p, f)] = first == p
        if not parent_ok[(p, f)]:
            fail(rid, "parent_commit is not the first parent of fix_commit")
        before = git_blob(gd, p, r["path"])
        if before is None:
            fail(rid, "path missing at parent_commit")
            continue
        lines = before.splitlines()
        b0, b1 = r["before_lines"]
        if not (1 <= b0 <= b1 <= len(lines)):
            fail(rid, f"before_lines {b0}-{b1} outside file ({len(lines)} lines)")
        else:
            for i in range(b0, b1 + 1):
                print(f"   - {i:5d}: {lines[i - 1].rstrip()}")
        after_path = r.get("after_path") or r["path"]
        after = git_blob(gd, f, after_path)
        if r.get("after_lines"):
            if after is None:
                fail(rid, "path missing at fix_commit")
                continue
            alines = after.splitlines()
            a0, a1 = r["after_lines"]
            if not (1 <= a0 <= a1 <= len(alines)):
                fail(rid, f"after_lines {a0}-{a1} outside file ({len(alines)} lines)")
            elif args.after:
                for i in range(a0, a1 + 1):
                    print(f"   + {i:5d}: {alines[i - 1].rstrip()}")
        elif after is None and args.after:
            print("   + (file gone at fix_commit)")
    print()
    print(table(["repo", "sites", "split"], [[k, v, ",".join(sorted(split_of_repo[k]))] for k, v in sorted(per_repo.items())]))
    print()
    print(table(["category", "sites"], [[k, v] for k, v in sorted(per_cat.items(), key=lambda kv: -kv[1])]))
    print()
    print(table(["split", "sites", "repos"], [[k, v, sum(1 for s in split_of_repo.values() if k in s)] for k, v in sorted(per_split.items())]))
    mixed = [k for k, s in split_of_repo.items() if len(s) > 1]
    if mixed:
        bad += 1
        print(f"  !! repositories in both splits: {', '.join(mixed)}")
    print(f"\n{len(records)} records, {len(per_repo)} repositories, {bad} problems")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirrors", default="/work/.mirror", help="directory of <owner>+<name>/repo git dirs")
    ap.add_argument("--repo", action="append", help="owner/name (repeatable); default: every mirror")
    ap.add_argument("--since", help="only commits after this date (git --since)")
    ap.add_argument("--min-net", type=int, default=1,
                    help="diff candidates must remove at least this many more hits than they add (default 1)")
    ap.add_argument("--no-tests", action="store_true", help="ignore tests/, examples/, benchmarks/, docs/ files")
    ap.add_argument("--max-files", type=int, default=40, help="skip commits touching more .py files (default 40)")
    ap.add_argument("--message-only", action="store_true", help="only commits whose message matches")
    ap.add_argument("--diff-only", action="store_true", help="only commits whose diff removes more than it adds")
    ap.add_argument("--width", type=int, default=70, help="subject column width")
    ap.add_argument("--check", metavar="CORPUS", help="validate a corpus .jsonl and print each site's before lines")
    ap.add_argument("--after", action="store_true", help="with --check: print after lines too")
    args = ap.parse_args()
    if args.check:
        return check(args)
    return mine(args)


if __name__ == "__main__":
    sys.exit(main())
