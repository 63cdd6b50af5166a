#!/usr/bin/env python3
"""Runtime ground truth: which lines of a package make the host wait for the GPU.

A *workload* module (``workloads/<name>.py``) defines ``package_root()`` (the package directory,
the one that holds ``__init__.py``, or the script folder for nanoGPT) and ``SCENARIOS``, a dict
``name -> factory(ctx)``; a factory builds what it needs (unarmed) and returns a callable that
does the work. The harness calls it once to warm up (allocator, cuBLAS handles, lazy imports,
first-call caches), then once more *armed*:

* ``torch.cuda.set_sync_debug_mode("warn")`` and ``warnings.simplefilter("always")``; every
  warning that reaches ``warnings._showwarnmsg`` (the function both ``warnings.warn`` and C code
  call before ``showwarning``; hooking it rather than ``showwarning`` keeps the count right inside
  ``catch_warnings(record=True)`` blocks, which reset ``showwarning``) with the debug-mode text
  is recorded as kind ``debug-mode``; a filter for that text is kept first in
  ``warnings.filters`` even when the code under test adds its own filters (``ignore`` blocks);
* ``torch.cuda.synchronize``, ``torch.accelerator.synchronize``, ``torch.cuda.Event.synchronize``
  and ``torch.cuda.Stream.synchronize`` are wrapped and recorded as kind ``synchronize`` (the
  debug mode misses the first three; a debug-mode warning raised inside a wrapped call is not
  counted twice);
* each record walks ``traceback.extract_stack()`` and keeps the innermost frame inside the
  package root: path relative to the root, line, the source line, the function, and ``via``,
  the innermost frame outside the package (which torch/lightning function really waited);
  syncs with no package frame on the stack are kept with ``path: null``;
* coverage.py measures the package's lines during the armed call only.

Subcommands::

    trace_syncs.py list  --workload W
    trace_syncs.py run   --workload W --scenario S --out DIR   # DIR/S.sites.jsonl, S.cov.json, S.meta.json
    trace_syncs.py merge --in DIR --out PKGDIR                 # PKGDIR/sync_sites.jsonl, coverage.json, summary.json

``sync_sites.jsonl`` rows: ``{"scenario","kind","path","line","code","count","function","via"}``;
``coverage.json``: ``{relpath: [executed lines]}`` (the format of shared/eval/score_runtime.py).

On a machine without CUDA the harness still runs (debug mode is off there and the wrapped
synchronize calls record and return without waiting): that tests the plumbing, coverage and
the outputs, not the syncs. Not detected at all (see README): non-blocking copies from pageable
host memory of 4 MB or more (they wait, unflagged), waits inside C++/CUDA libraries that do not
go through the debug-mode hook, and syncs in DataLoader worker processes (all workloads use
``num_workers=0``).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import linecache
import os
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings

SYNC_TEXT = "synchronizing CUDA operation"
HERE = os.path.realpath(__file__)
_WARN_FILES = {os.path.realpath(warnings.__file__)}


def _short(path: str) -> str:
    """A short, machine-independent name for a file outside the package (for ``via``)."""
    p = path.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/", "/.rt/src/", "/lib/python3"):
        i = p.rfind(marker)
        if i >= 0:
            tail = p[i + len(marker):]
            if marker == "/lib/python3":
                tail = "stdlib/" + tail.split("/", 1)[-1]
            return tail
    return "/".join(p.split("/")[-3:])


class Recorder:
    def __init__(self, root: str):
        self.root = os.path.realpath(root).rstrip(os.sep) + os.sep
        self.sites = collections.Counter()  # (kind, path, line, function, via) -> count
        self.other_warnings = collections.Counter()
        self._real = {}
        self._tl = threading.local()
        self.armed = False

    def _realpath(self, fn):
        r = self._real.get(fn)
        if r is None:
            r = self._real[fn] = os.path.realpath(fn)
        return r

    def in_wrapper(self) -> bool:
        return getattr(self._tl, "depth", 0) > 0

    def record(self, kind: str, via_default: str | None = None):
        stack = traceback.extract_stack()
        via = via_default
        for fs in reversed(stack):
            fn = self._realpath(fs.filename)
            if fn == HERE or fn in _WARN_FILES:
                continue
            if fn.startswith(self.root):
                rel = os.path.relpath(fn, self.root)
                self.sites[(kind, rel, fs.lineno, fs.name, via)] += 1
                return
            if via is None:
                via = f"{_short(fn)}:{fs.name}"
        self.sites[(kind, None, None, None, via)] += 1

    # -- arming ---------------------------------------------------------------------------
    def arm(self, torch):
        self._saved = []
        rec = self

        # warnings: hook _showwarnmsg, keep an 'always' filter for the sync text first
        orig_show = warnings._showwarnmsg

        def _showwarnmsg(msg):
            if rec.armed and SYNC_TEXT in str(msg.message):
                if not rec.in_wrapper():
                    rec.record("debug-mode")
                return  # counted; not printed
            if rec.armed:
                rec.other_warnings[f"{msg.category.__name__}: {str(msg.message)[:120]}"] += 1
            return orig_show(msg)

        self._saved.append((warnings, "_showwarnmsg", orig_show))
        warnings._showwarnmsg = _showwarnmsg

        orig_simple, orig_filter = warnings.simplefilter, warnings.filterwarnings

        def _keep_first():
            orig_filter("always", message=".*" + SYNC_TEXT)

        def simplefilter(*a, **k):
            orig_simple(*a, **k)
            _keep_first()

        def filterwarnings(*a, **k):
            orig_filter(*a, **k)
            _keep_first()

        self._saved += [(warnings, "simplefilter", orig_simple), (warnings, "filterwarnings", orig_filter)]
        warnings.simplefilter, warnings.filterwarnings = simplefilter, filterwarnings
        self._saved_filters = list(warnings.filters)
        orig_simple("always")
        _keep_first()

        # explicit waits the debug mode does not report
        cuda_ok = torch.cuda.is_available()

        def wrap(owner, name, label):
            orig = getattr(owner, name, None)
            if orig is None:
                return

            def wrapper(*a, **k):
                if rec.armed and not rec.in_wrapper():
                    rec.record("synchronize", label)
                rec._tl.depth = getattr(rec._tl, "depth", 0) + 1
                try:
                    if not cuda_ok:
                        return None  # CPU dry run: nothing to wait for
                    return orig(*a, **k)
                finally:
                    rec._tl.depth -= 1

            wrapper.__name__ = getattr(orig, "__name__", name)
            wrapper.__wrapped__ = orig
            try:
                setattr(owner, name, wrapper)
            except (TypeError, AttributeError):
                return
            self._saved.append((owner, name, orig))

        wrap(torch.cuda, "synchronize", "torch.cuda.synchronize")
        if hasattr(torch, "accelerator"):
            wrap(torch.accelerator, "synchronize", "torch.accelerator.synchronize")
        wrap(torch.cuda.Event, "synchronize", "Event.synchronize")
        wrap(torch.cuda.Stream, "synchronize", "Stream.synchronize")

        if cuda_ok:
            torch.cuda.set_sync_debug_mode("warn")
        self.armed = True

    def disarm(self, torch):
        self.armed = False
        if torch.cuda.is_available():
            torch.cuda.set_sync_debug_mode(0)
        for owner, name, orig in reversed(self._saved):
            setattr(owner, name, orig)
        warnings.filters[:] = self._saved_filters
        warnings._filters_mutated() if hasattr(warnings, "_filters_mutated") else None


class Ctx(types.SimpleNamespace):
    pass


def load_workload(path: str):
    path = os.path.realpath(path)
    name = "wl_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def cmd_list(args):
    wl = load_workload(args.workload)
    for name in wl.SCENARIOS:
        print(name)


def cmd_run(args):
    os.makedirs(args.out, exist_ok=True)
    meta = {"scenario": args.scenario, "workload": os.path.basename(args.workload), "status": "error"}
    sites_path = os.path.join(args.out, f"{args.scenario}.sites.jsonl")
    cov_path = os.path.join(args.out, f"{args.scenario}.cov.json")
    meta_path = os.path.join(args.out, f"{args.scenario}.meta.json")

    def dump_meta():
        with open(meta_path, "w") as fh:
            json.dump(meta, fh, indent=1, sort_keys=True)

    try:
        import torch

        meta["torch"] = torch.__version__
        meta["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        wl = load_workload(args.workload)
        root = os.path.realpath(wl.package_root())
        meta["root"] = root
        factory = wl.SCENARIOS[args.scenario]
        device = torch.device("cuda" if (torch.cuda.is_available() and args.device != "cpu") else "cpu")
        tmp = tempfile.mkdtemp(prefix=f"rt-{args.scenario}-")
        ctx = Ctx(device=device, cuda=device.type == "cuda", tmp=tmp, scenario=args.scenario)
        t0 = time.perf_counter()
        fn = factory(ctx)
        meta["setup_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        fn()  # warm-up, unarmed
        if ctx.cuda:
            torch.cuda.synchronize()
        meta["warmup_s"] = round(time.perf_counter() - t0, 3)

        import coverage

        rec = Recorder(root)
        cov = coverage.Coverage(data_file=None, source=[root], branch=False, config_file=False)
        rec.arm(torch)
        cov.start()
        t0 = time.perf_counter()
        try:
            fn()
        finally:
            cov.stop()
            rec.disarm(torch)
        if ctx.cuda:
            torch.cuda.synchronize()
        meta["armed_s"] = round(time.perf_counter() - t0, 3)

        data = cov.get_data()
        covered = {}
        for f in data.measured_files():
            rf = os.path.realpath(f)
            if not rf.startswith(rec.root):
                continue
            lines = data.lines(f) or []
            if lines:
                covered[os.path.relpath(rf, rec.root)] = sorted(set(lines))
        with open(cov_path, "w") as fh:
            json.dump(covered, fh, sort_keys=True)
        rows = []
        for (kind, path, line, func, via), n in sorted(rec.sites.items(), key=lambda kv: (str(kv[0][1]), kv[0][2] or 0, kv[0][0])):
            code = None
            if path is not None:
                code = linecache.getline(os.path.join(root, path), line).rstrip("\r\n")
            rows.append({"scenario": args.scenario, "kind": kind, "path": path, "line": line, "code": code,
                         "count": n, "function": func, "via": via})
        with open(sites_path, "w") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
        meta.update(
            status="ok",
            syncs=sum(r["count"] for r in rows),
            syncs_attributed=sum(r["count"] for r in rows if r["path"] is not None),
            sites=len({(r["path"], r["line"]) for r in rows if r["path"] is not None}),
            covered_lines=sum(len(v) for v in covered.values()),
            covered_files=len(covered),
            other_warnings=dict(rec.other_warnings.most_common(10)),
        )
        print(f"[{args.scenario}] ok: {meta['syncs']} syncs ({meta['syncs_attributed']} in package) at "
              f"{meta['sites']} sites; {meta['covered_lines']} lines in {meta['covered_files']} files; "
              f"warm {meta['warmup_s']}s armed {meta['armed_s']}s")
    except BaseException as exc:  # noqa: BLE001 - we log and go on to the next scenario
        meta["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        meta["traceback"] = traceback.format_exc()[-6000:]
        traceback.print_exc()
        dump_meta()
        sys.exit(1)
    dump_meta()


def cmd_merge(args):
    os.makedirs(args.out, exist_ok=True)
    rows, coverage_all, summary = [], collections.defaultdict(set), []
    for fn in sorted(os.listdir(args.inp)):
        if not fn.endswith(".meta.json"):
            continue
        scen = fn[: -len(".meta.json")]
        with open(os.path.join(args.inp, fn)) as fh:
            meta = json.load(fh)
        summary.append({k: meta.get(k) for k in ("scenario", "status", "error", "syncs", "syncs_attributed", "sites",
                                                   "covered_lines", "setup_s", "warmup_s", "armed_s", "device", "torch")})
        if meta.get("status") != "ok":
            continue
        with open(os.path.join(args.inp, f"{scen}.sites.jsonl")) as fh:
            rows += [json.loads(x) for x in fh if x.strip()]
        with open(os.path.join(args.inp, f"{scen}.cov.json")) as fh:
            for p, lines in json.load(fh).items():
                coverage_all[p].update(lines)
    with open(os.path.join(args.out, "sync_sites.jsonl"), "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    with open(os.path.join(args.out, "coverage.json"), "w") as fh:
        json.dump({p: sorted(v) for p, v in sorted(coverage_all.items())}, fh, indent=0, sort_keys=True)
    with open(os.path.join(args.out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    distinct = {(r["path"], r["line"]) for r in rows if r["path"] is not None}
    print(f"{args.out}: {len(summary)} scenarios ({sum(1 for s in summary if s['status'] == 'ok')} ok), "
          f"{len(rows)} rows, {len(distinct)} distinct sites, {sum(len(v) for v in coverage_all.values())} covered lines")
    print(f"  {'scenario':34s} {'status':6s} {'syncs':>6s} {'in-pkg':>6s} {'sites':>5s} {'lines':>6s} {'armed_s':>7s}")
    for s in summary:
        print(f"  {s['scenario']:34s} {s['status']:6s} {s.get('syncs') or 0:6d} {s.get('syncs_attributed') or 0:6d} "
              f"{s.get('sites') or 0:5d} {s.get('covered_lines') or 0:6d} {s.get('armed_s') or 0:7.2f}"
              + (f"  {s['error'][:80]}" if s.get("error") else ""))


SELFTEST_PKG = '''import warnings, torch
MSG = "called a synchronizing CUDA operation"

def plain():
    warnings.warn(MSG)                                   # line 5

def hidden():
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("ignore")
        warnings.warn(MSG)                               # line 10

def explicit():
    torch.cuda.synchronize()                             # line 13

def run():
    for _ in range(3):
        plain()
    hidden()
    explicit()
'''


def cmd_selftest(args):
    """Plumbing check without a GPU: a fake package warns with the debug-mode text (also inside
    catch_warnings(record=True) + simplefilter('ignore')) and calls torch.cuda.synchronize."""
    import torch

    d = tempfile.mkdtemp(prefix="rt-selftest-")
    pkg = os.path.join(d, "fakepkg")
    os.makedirs(pkg)
    open(os.path.join(pkg, "__init__.py"), "w").write(SELFTEST_PKG)
    sys.path.insert(0, d)
    import fakepkg

    rec = Recorder(pkg)
    rec.arm(torch)
    try:
        fakepkg.run()
    finally:
        rec.disarm(torch)
    got = {(k, p, ln): n for (k, p, ln, _f, _v), n in rec.sites.items()}
    want = {("debug-mode", "__init__.py", 5): 3, ("debug-mode", "__init__.py", 10): 1,
            ("synchronize", "__init__.py", 13): 1}
    print("recorded:", got)
    print("selftest", "ok" if got == want else f"FAILED, wanted {want}")
    sys.exit(0 if got == want else 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list")
    p.add_argument("--workload", required=True)
    p = sub.add_parser("run")
    p.add_argument("--workload", required=True)
    p.add_argument("--scenario", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="auto", choices=["auto", "cpu"])
    p = sub.add_parser("merge")
    p.add_argument("--in", dest="inp", required=True)
    p.add_argument("--out", required=True)
    sub.add_parser("selftest")
    args = ap.parse_args(argv)
    {"list": cmd_list, "run": cmd_run, "merge": cmd_merge, "selftest": cmd_selftest}[args.cmd](args)


if __name__ == "__main__":
    main()
