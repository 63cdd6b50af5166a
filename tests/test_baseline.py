"""Adopting synclint on a codebase with findings: a baseline file, or `# noqa` comments everywhere."""

from __future__ import annotations

import json

from conftest import run_cli

KERNEL = """import torch


def step(logits):
    probs = torch.zeros(4, device="cuda")
    best = probs.max().item()
    if probs.any():
        return best
    return probs.sum().item()
"""
NEW_FINDING = """

def added():
    t = torch.ones(2, device="cuda")
    return t.sum().item()
"""


def check(tmp_path, *args):
    proc = run_cli("check", "--output-format", "concise", *args, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def rows(proc) -> list[str]:
    return [line.split(" ", 1)[0] for line in proc.stdout.splitlines() if ": SYNC" in line]


def test_write_then_check_against_the_baseline(tmp_path):
    (tmp_path / "model.py").write_text(KERNEL)
    assert check(tmp_path, ".").returncode == 1
    wrote = check(tmp_path, "--write-baseline", "synclint-baseline.json", ".")
    assert wrote.returncode == 0 and "Wrote 3 findings to synclint-baseline.json." in wrote.stderr
    data = json.loads((tmp_path / "synclint-baseline.json").read_text())
    assert data["format"] == "synclint-baseline"
    assert {(e["code"], e["path"], e["line"]) for e in data["findings"]} == {
        ("SYNC101", "model.py", "if probs.any():"),
        ("SYNC107", "model.py", "best = probs.max().item()"),
        ("SYNC107", "model.py", "return probs.sum().item()"),
    }
    proc = check(tmp_path, "--baseline", "synclint-baseline.json", ".")
    assert proc.returncode == 0 and proc.stderr == ""


def test_moved_lines_and_renamed_function_stay_baselined_new_findings_do_not(tmp_path):
    (tmp_path / "model.py").write_text(KERNEL)
    check(tmp_path, "--write-baseline", "base.json", ".")
    moved = KERNEL.replace("import torch\n", "import torch\nimport os\n\n# a comment\n").replace("def step", "def decode")
    (tmp_path / "model.py").write_text(moved.replace("    return probs.sum().item()\n", "\n\n    return probs.sum().item()\n"))
    assert check(tmp_path, "--baseline", "base.json", ".").returncode == 0
    (tmp_path / "model.py").write_text(moved + NEW_FINDING)
    proc = check(tmp_path, "--baseline", "base.json", ".")
    assert proc.returncode == 1
    assert rows(proc) == ["model.py:17:12:"]


def test_one_more_copy_of_a_baselined_line_is_new(tmp_path):
    (tmp_path / "model.py").write_text(KERNEL)
    check(tmp_path, "--write-baseline", "base.json", ".")
    (tmp_path / "model.py").write_text(KERNEL.replace("    return best\n", "    return best\n    best = probs.max().item()\n"))
    proc = check(tmp_path, "--baseline", "base.json", ".")
    assert rows(proc) == ["model.py:9:12:"]


def test_fixed_findings_are_reported_stale(tmp_path):
    (tmp_path / "model.py").write_text(KERNEL)
    check(tmp_path, "--write-baseline", "base.json", ".")
    (tmp_path / "model.py").write_text(KERNEL.replace("    if probs.any():\n        return best\n", ""))
    proc = check(tmp_path, "--baseline", "base.json", ".")
    assert proc.returncode == 0
    assert "1 baseline entry no longer found (fixed or changed); shrink base.json with --write-baseline" in proc.stderr
    check(tmp_path, "--write-baseline", "base.json", ".")
    assert len(json.loads((tmp_path / "base.json").read_text())["findings"]) == 2


def test_baseline_survives_a_moved_file_and_another_working_directory(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(KERNEL)
    check(tmp_path, "--write-baseline", "base.json", "pkg")
    (tmp_path / "pkg" / "model.py").rename(tmp_path / "pkg" / "renamed.py")
    assert check(tmp_path / "pkg", "--baseline", "../base.json", ".").returncode == 0


def test_baseline_from_config(tmp_path):
    (tmp_path / "model.py").write_text(KERNEL)
    check(tmp_path, "--write-baseline", "base.json", ".")
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nbaseline = "base.json"\n')
    assert check(tmp_path, ".").returncode == 0


def test_bad_baseline_files_are_exit_2_with_one_line(tmp_path):
    (tmp_path / "model.py").write_text(KERNEL)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"findings": []}')
    for name, message in [
        ("missing.json", "missing.json: no such baseline file (write one with --write-baseline)"),
        ("bad.json", "bad.json: not a synclint baseline (invalid JSON"),
        ("other.json", "other.json: not a synclint baseline"),
    ]:
        proc = check(tmp_path, "--baseline", name, ".")
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_add_noqa_silences_every_finding_and_keeps_the_code_valid(tmp_path):
    tricky = KERNEL + '''

def more(x):
    y = torch.ones(2, device="cuda")
    s = f"""{y.sum().item()}
"""
    z = y.max().item() + \\
        1
    w = y.min().item()  # noqa: E501
    return y.mean().item()  # keep this comment
'''
    (tmp_path / "model.py").write_text(tricky)
    proc = run_cli("check", "--add-noqa", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "Added 7 noqa directives in 1 file.\n"
    text = (tmp_path / "model.py").read_text()
    compile(text, "model.py", "exec")
    assert "    best = probs.max().item()  # noqa: SYNC107\n" in text
    assert "    if probs.any():  # noqa: SYNC101\n" in text
    assert "    w = y.min().item()  # noqa: E501, SYNC107\n" in text
    assert "    return y.mean().item()  # keep this comment  # noqa: SYNC107\n" in text
    # A line that cannot end in a comment (inside an f-string, before a backslash) takes it where its
    # text ends, as ruff puts it; the check reads it there.
    assert '    s = f"""{y.sum().item()}\n"""  # noqa: SYNC107\n' in text
    assert "    z = y.max().item() + \\\n        1  # noqa: SYNC107\n" in text
    left = check(tmp_path, ".")
    assert left.returncode == 0 and rows(left) == []
    again = run_cli("check", "--add-noqa", ".", cwd=tmp_path)
    assert again.returncode == 0 and again.stderr == "Added 0 noqa directives in 0 files.\n"
    assert (tmp_path / "model.py").read_text() == text


def _package(tmp_path):
    """The issue's three files: a helper that syncs on what it is given, and a training loop in another
    file that gives it a GPU mask; and a second module whose findings rest on the first's facts."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text(
        "import torch\n\n\ndef count(mask):\n    return mask.sum().item()\n")
    (tmp_path / "pkg" / "train.py").write_text(
        "import torch\n\nfrom pkg.helpers import count\n\n\n"
        "def run(model, loader):\n"
        "    for batch in loader:\n"
        "        mask = torch.ones(4, device=\"cuda\") > 0\n"
        "        n = count(mask)\n"
        "        print(n)\n")
    (tmp_path / "pkg" / "meta.py").write_text(
        "from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\nclass Meta:\n"
        "    lens: torch.Tensor\n\n"
        "    @property\n    def lens_cpu(self) -> torch.Tensor:\n        return self.lens.to(\"cpu\")\n")
    (tmp_path / "pkg" / "step.py").write_text(
        "import torch\n\nfrom pkg.meta import Meta\n\n\n"
        "def forward(meta: Meta):\n"
        "    return meta.lens_cpu\n")


def test_add_noqa_covers_findings_that_rest_on_another_files_facts(tmp_path):
    _package(tmp_path)
    before = check(tmp_path, "pkg")
    assert before.returncode == 1
    found = rows(before)
    # `count`'s parameter is a GPU tensor only because train.py passes one; `meta.lens_cpu` syncs only
    # because meta.py's getter does.
    assert "pkg/helpers.py:5:12:" in found and "pkg/step.py:7:12:" in found
    proc = run_cli("check", "--add-noqa", "pkg", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"Added {len(found)} noqa directives in {len({r.split(':')[0] for r in found})} files.\n"
    assert (tmp_path / "pkg" / "helpers.py").read_text().endswith("    return mask.sum().item()  # noqa: SYNC107\n")
    after = check(tmp_path, "pkg")
    assert (after.returncode, after.stdout) == (0, "All checks passed!\n")
    assert run_cli("check", "--add-noqa", "pkg", cwd=tmp_path).stderr == "Added 0 noqa directives in 0 files.\n"


def test_baseline_and_add_noqa_cover_the_same_findings(tmp_path):
    _package(tmp_path)
    wrote = check(tmp_path, "--write-baseline", "base.json", "pkg")
    entries = json.loads((tmp_path / "base.json").read_text())["findings"]
    proc = run_cli("check", "--add-noqa", "pkg", cwd=tmp_path)
    assert wrote.returncode == 0 and entries
    recorded = sum(e["count"] for e in entries)
    assert proc.stderr == f"Added {recorded} noqa directives in {len({e['path'] for e in entries})} files.\n"
    assert check(tmp_path, "--baseline", "base.json", "pkg").stderr == (
        f"synclint: {len(entries)} baseline entries no longer found (fixed or changed); shrink base.json with "
        "--write-baseline\n")


def test_entries_of_files_the_run_did_not_check_are_not_stale(tmp_path):
    # pre-commit checks only the staged files: the other files' entries are not gone.
    (tmp_path / "model.py").write_text(KERNEL)
    (tmp_path / "other.py").write_text(KERNEL.replace("def step", "def other"))
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nbaseline = "base.json"\n')
    check(tmp_path, "--write-baseline", "base.json", ".")
    proc = check(tmp_path, "model.py")
    assert proc.returncode == 0 and proc.stderr == ""
    (tmp_path / "model.py").write_text(KERNEL.replace("    if probs.any():\n        return best\n", ""))
    proc = check(tmp_path, "model.py")
    assert proc.returncode == 0
    assert proc.stderr == ("synclint: 1 baseline entry no longer found (fixed or changed); shrink base.json with "
                           "--write-baseline\n")
    # A file deleted from a folder the run walked: its entries are stale; elsewhere, they are not.
    (tmp_path / "other.py").unlink()
    assert "4 baseline entries no longer found" in check(tmp_path, "model.py", ".").stderr
    assert check(tmp_path, "model.py").stderr.startswith("synclint: 1 baseline entry no longer found")


def test_writing_the_baseline_of_some_files_keeps_the_entries_of_the_others(tmp_path):
    (tmp_path / "model.py").write_text(KERNEL)
    (tmp_path / "other.py").write_text(KERNEL.replace("def step", "def other"))
    check(tmp_path, "--write-baseline", "base.json", ".")
    (tmp_path / "model.py").write_text(KERNEL.replace("    if probs.any():\n        return best\n", ""))
    wrote = check(tmp_path, "--write-baseline", "base.json", "model.py")
    assert "Wrote 2 findings to base.json (and kept 3 of files this run did not check)." in wrote.stderr
    paths = [e["path"] for e in json.loads((tmp_path / "base.json").read_text())["findings"]]
    assert sorted(paths) == ["model.py", "model.py", "other.py", "other.py", "other.py"]
    assert check(tmp_path, "--baseline", "base.json", ".").stderr == ""


def test_add_noqa_accepts_a_table_too_long_to_analyse_but_not_a_file_that_does_not_parse(tmp_path):
    # A generated table (detectron2's LVIS categories): valid Python, one line of thousands of operators.
    table = "import torch\n\nTABLE = [" + ", ".join(f"{{'id': {i}, 'name': 'x' + 'y'}}" for i in range(3000)) + "]\n"
    (tmp_path / "table.py").write_text(table)
    (tmp_path / "py2.py").write_text("import torch\nprint 'hello'\n")
    found = rows(check(tmp_path, "."))
    assert found == ["py2.py:2:1:", "table.py:3:1:"]  # (the table's file is not analysed: SYNC000 says why)
    proc = run_cli("check", "--add-noqa", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "Added 1 noqa directive in 1 file.\n")
    text = (tmp_path / "table.py").read_text()
    assert text == table.replace("]\n", "]  # noqa: SYNC000\n") and (tmp_path / "py2.py").read_text().count("noqa") == 0
    left = check(tmp_path, ".")
    assert rows(left) == ["py2.py:2:1:"]  # a syntax error is fixed or excluded, not silenced
