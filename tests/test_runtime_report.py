"""`synclint check --runtime-report`: findings a test run confirmed, and syncs no rule found."""

from __future__ import annotations

import json

from conftest import run_cli

KERNEL = """import torch

x = torch.randn(4, device="cuda")
if x.any():
    pass
n = helper(x)
"""


def report(tmp_path, sites):
    path = tmp_path / "syncs.json"
    path.write_text(json.dumps({"simulated": True, "device": "cpu", "root": str(tmp_path), "allowed": 0, "sites": sites}))
    return path


def test_confirmed_findings_and_missed_sites(write, tmp_path):
    write("kernel.py", KERNEL)
    report(tmp_path, [
        {"kind": "sync", "file": "kernel.py", "line": 4, "op": "aten::_local_scalar_dense", "count": 3, "tests": ["t"]},
        {"kind": "sync", "file": "kernel.py", "line": 6, "op": "aten::nonzero", "count": 1, "tests": ["t"]},
        {"kind": "sync", "file": None, "line": None, "op": "aten::item", "count": 1, "tests": ["t"]},
    ])
    proc = run_cli("check", "kernel.py", "--runtime-report", "syncs.json", "--output-format", "json", cwd=tmp_path)
    assert proc.returncode == 1
    findings = json.loads(proc.stdout)
    assert [(f["code"], f["location"]["row"], f["runtime_syncs"]) for f in findings] == [("SYNC101", 4, 3)]
    assert "1 sync site(s) seen at runtime that no rule found:" in proc.stderr
    assert "kernel.py:6: aten::nonzero (1x)" in proc.stderr


def test_a_broken_report_is_exit_2(write, tmp_path):
    write("kernel.py", KERNEL)
    write("syncs.json", "{not json")
    proc = run_cli("check", "kernel.py", "--runtime-report", "syncs.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert "not a sync report" in proc.stderr and "Traceback" not in proc.stderr
