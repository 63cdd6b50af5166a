"""pytest plugin: `pytest --sync-check=warn|error` finds the GPU<->CPU syncs a test suite makes.

Registered through the `pytest11` entry point as `synclint`, and off unless asked (it imports
no torch until then). With `--sync-check`, the body of each test runs under synclint's runtime
detector: on a GPU, CUDA's sync debug mode plus the synchronize wrappers; without one, the CPU
simulation (`synclint.verify.cpu`), which treats every tensor as if it lived on the GPU except
tensors built from host data (`torch.tensor(list)`, `from_numpy`). At the end it prints every
sync site in your code (file:line, operation, count, tests), most frequent first.

- `warn` reports; `error` also fails each test that syncs outside an allowed region.
- Allowed: tests marked `@pytest.mark.allow_sync`, and code inside `with gpu_sync_allowed():`,
  synclint's (`from synclint.verify import gpu_sync_allowed`) or any context manager of that
  name up the Python stack, so production code can carry its own no-op one.
- `--sync-report FILE` writes the sites as JSON (`synclint.runtime`'s schema; a test suite's waits are
  not timed: `synclint trace` times a program's).
- Only the test body is watched, not fixtures' setup and teardown (placing inputs on the GPU
  there is expected). Under pytest-xdist each worker reports its own sites.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from synclint.verify.cpu import Simulator
    from synclint.verify.cuda import CudaDetector

PLUGIN_NAME = "synclint-sync-check"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("synclint", "GPU<->CPU syncs (synclint)")
    group.addoption("--sync-check", choices=("off", "warn", "error"), default="off",
                    help="watch each test for GPU<->CPU syncs: report them (warn) or fail the test (error)")
    group.addoption("--sync-report", metavar="FILE", default=None,
                    help="write the sync sites as JSON (implies --sync-check=warn if not set)")
    group.addoption("--sync-check-device", choices=("auto", "cuda", "cpu"), default="auto",
                    help="cuda: the CUDA debug mode; cpu: the simulation (default: cuda if available)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "allow_sync: this test may sync the GPU (synclint --sync-check does not count it)")
    mode = config.getoption("sync_check")
    report = config.getoption("sync_report")
    if mode == "off" and not report:
        return
    config.pluginmanager.register(SyncCheck(config, "warn" if mode == "off" else mode, report), PLUGIN_NAME)


class SyncCheck:
    def __init__(self, config: pytest.Config, mode: str, report: str | None) -> None:
        self.config = config
        self.mode = mode
        self.report = Path(report) if report else None
        self.device = config.getoption("sync_check_device")
        self.detector: CudaDetector | Simulator | None = None
        self.sites: dict[tuple, dict] = {}
        self.allowed = 0
        self.tests_with_syncs: set[str] = set()

    def _detector(self):
        if self.detector is None:
            import torch

            from synclint.verify.sites import UserCode

            use_cuda = self.device == "cuda" or (self.device == "auto" and torch.cuda.is_available())
            if use_cuda:
                from synclint.verify.cuda import CudaDetector

                self.detector = CudaDetector(UserCode())
            else:
                from synclint.verify.cpu import Simulator

                self.detector = Simulator(UserCode(), placement=False)
        return self.detector

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        if item.get_closest_marker("allow_sync") is not None:
            return (yield)
        detector = self._detector()
        with detector.watch() as recording:
            try:
                result = yield
            except BaseException:
                self._collect(item, recording)
                raise
        offending = self._collect(item, recording)
        if self.mode == "error" and offending:
            lines = "\n".join(f"  {self._where(e.site)}: {e.op}" + (f" (x{n})" if n > 1 else "")
                              for e, n in offending)
            raise pytest.fail.Exception(
                f"synclint: this test made the host wait for the GPU outside an allowed region"
                f"{' (simulated on the CPU)' if detector.simulated else ''}:\n{lines}\n"
                "Mark the test @pytest.mark.allow_sync, or wrap an intended sync in gpu_sync_allowed().",
                pytrace=False,
            )
        return result

    def _where(self, site) -> str:
        if site is None:
            return "<outside your code>"
        return f"{self._relative(site.file)}:{site.line}"

    def _relative(self, file: str) -> str:
        try:
            return os.path.relpath(file, self.config.rootpath)
        except ValueError:
            return file

    def _collect(self, item: pytest.Item, recording) -> list:
        """Add the test's events to the sites; return its offending (event, count) pairs."""
        counted: dict = {}
        for event in recording.events:
            if event.allowed:
                self.allowed += 1
                continue
            key = (event.site.file if event.site else None, event.site.line if event.site else None, event.op,
                   event.kind)
            site = self.sites.setdefault(key, {"kind": event.kind, "file": self._relative(key[0]) if key[0] else None,
                                               "line": key[1], "function": event.site.function if event.site else None,
                                               "op": event.op, "count": 0, "tests": [],
                                               "source": event.site.source() if event.site else ""})
            site["count"] += 1
            if item.nodeid not in site["tests"]:
                site["tests"].append(item.nodeid)
            if event.kind == "sync":
                self.tests_with_syncs.add(item.nodeid)
            if key not in counted:
                counted[key] = [event, 0]
            counted[key][1] += 1
        return [(event, n) for event, n in counted.values()]

    def ordered_sites(self) -> list[dict]:
        return sorted(self.sites.values(), key=lambda s: (-s["count"], s["file"] or "", s["line"] or 0, s["op"]))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        simulated = self.detector is not None and self.detector.simulated
        title = "synclint: GPU<->CPU sync sites" + (" (simulated on the CPU)" if simulated else "")
        terminalreporter.section(title)
        sites = self.ordered_sites()
        if not sites:
            terminalreporter.write_line("no syncs outside allowed regions"
                                        + (f" ({self.allowed} allowed)" if self.allowed else ""))
        for site in sites:
            tests = ", ".join(t.split("::", 1)[-1] for t in site["tests"][:3])
            more = f" (+{len(site['tests']) - 3})" if len(site["tests"]) > 3 else ""
            where = f"{site['file']}:{site['line']}" if site["file"] else "<outside your code>"
            kind = "" if site["kind"] == "sync" else f"[{site['kind']}] "
            terminalreporter.write_line(f"{site['count']:6d}  {where}  {kind}{site['op']}  tests: {tests}{more}")
        if sites:
            terminalreporter.write_line(f"{sum(s['count'] for s in sites)} syncs at {len(sites)} sites in "
                                        f"{len(self.tests_with_syncs)} tests"
                                        + (f"; {self.allowed} more in allowed regions" if self.allowed else ""))
        if self.report is not None:
            from synclint.runtime import report_document

            data = report_document("pytest", simulated=simulated,
                                   device=None if self.detector is None else self.detector.kind,
                                   root=str(self.config.rootpath), allowed=self.allowed, wall_s=None,
                                   sites=[{**site, "wait_s": None} for site in sites])
            self.report.parent.mkdir(parents=True, exist_ok=True)
            self.report.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            terminalreporter.write_line(f"sync sites written to {self.report}")
