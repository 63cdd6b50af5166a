"""The command line as a user meets it: real files, real output, real exit codes.

Most tests run `cli.main` in this process (conftest.run_cli); the ones about the process itself
(its exit code, standard input through a pipe, what it imports, its exit) start one.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_cli, run_json, run_process

OVERFLOW = """import torch

x = torch.randn(4, device="cuda")
if x.isinf().any() or x.isnan().any():
    x = torch.clamp(x, min=-1e4, max=1e4)
"""
NUMPY = """import numpy as np

x = np.random.randn(4)
if np.isinf(x).any() or np.isnan(x).any():
    x = np.clip(x, -1e4, 1e4)
"""


def test_overflow_check_is_reported_with_exit_1(write, tmp_path):
    path = write("kernel.py", OVERFLOW)
    proc = run_cli("check", str(path), cwd=tmp_path)
    assert proc.returncode == 1
    assert "kernel.py:4:4: SYNC101 (code) `x.isinf().any()` is a CUDA tensor" in proc.stdout
    assert "kernel.py:4:23: SYNC101 (code) `x.isnan().any()`" in proc.stdout
    # The text format shows the source line with the range marked.
    assert "4 | if x.isinf().any() or x.isnan().any():" in proc.stdout
    assert "   ^^^^^^^^^^^^^^^ SYNC101" in proc.stdout
    assert "Found 2 findings: 2 per call." in proc.stdout


def test_bare_form_is_check(write, tmp_path):
    write("kernel.py", OVERFLOW)
    proc = run_cli("kernel.py", "--output-format", "concise", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("kernel.py:4:4: SYNC101 ")


def test_every_output_format_reports_the_finding(write, tmp_path):
    write("kernel.py", OVERFLOW)
    for fmt in ("text", "concise", "json", "sarif", "github"):
        proc = run_cli("check", "kernel.py", "--output-format", fmt, cwd=tmp_path)
        assert proc.returncode == 1, fmt
        assert "SYNC101" in proc.stdout, fmt
    code, findings = run_json("check", "kernel.py", cwd=tmp_path)
    assert code == 1
    assert [(f["code"], f["location"]["row"], f["location"]["column"]) for f in findings] == [
        ("SYNC101", 4, 4),
        ("SYNC101", 4, 23),
    ]
    first = findings[0]
    assert first["filename"] == "kernel.py"
    assert first["end_location"] == {"row": 4, "column": 19}
    assert first["noqa_row"] == 4
    assert first["confidence"] == "high"
    assert set(first) >= {"code", "message", "filename", "location", "end_location", "fix", "url", "noqa_row"}


def test_github_format_is_workflow_commands(write, tmp_path):
    write("kernel.py", OVERFLOW)
    proc = run_cli("check", "kernel.py", "--output-format", "github", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert lines[0] == ("::warning file=kernel.py,line=4,col=4,endLine=4,endColumn=19,title=SYNC101 (sync-in-condition)::"
                        "SYNC101 `x.isinf().any()` is a CUDA tensor, used as a Python bool; the host waits for the GPU"
                        '%0Abecause: made by torch.randn(...) on "cuda" (high confidence)')


def test_sarif_and_github_levels_follow_confidence_and_how_often_the_line_runs(write, tmp_path):
    # A proven sync is an error only where it is paid every step: at the top level of a module (once
    # per import, or per call as far as synclint knows) it is a warning; a value of unknown type is a note.
    # (in a training loop: one that runs backward)
    write("kernel.py", OVERFLOW + "\n\ndef f(y):\n    return y.item()\n\n\ndef g(model, xs):\n"
                                  "    for x in xs:\n        print(torch.ones(2, device=\"cuda\").sum().item())\n"
                                  "        model(x).sum().backward()\n")
    proc = run_cli("check", "kernel.py", "--output-format", "sarif", "--min-confidence", "low", cwd=tmp_path)
    results = json.loads(proc.stdout)["runs"][0]["results"]
    assert [(r["locations"][0]["physicalLocation"]["region"]["startLine"], r["properties"]["context"],
             r["properties"]["confidence"], r["level"]) for r in results] == [
        (4, "code", "high", "warning"), (4, "code", "high", "warning"), (9, "code", "low", "note"),
        (14, "loop", "high", "error")]
    proc = run_cli("check", "kernel.py", "--output-format", "github", "--min-confidence", "low", cwd=tmp_path)
    assert [line.split(" ", 1)[0] for line in proc.stdout.splitlines()] == ["::warning", "::warning", "::notice",
                                                                             "::error"]


def test_a_one_time_set_up_copy_is_a_notice_however_sure(write, tmp_path):
    write("train.py", "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self):\n"
                      "        super().__init__()\n        self.w = torch.ones(1, device=\"cuda\")\n"
                      "        self.ok = bool(self.w.item())\n")
    proc = run_cli("check", "train.py", "--output-format", "github", "--min-confidence", "low", cwd=tmp_path)
    assert proc.stdout.startswith("::notice file=train.py,line=8,")


def test_sarif_results_say_why(write, tmp_path):
    write("kernel.py", OVERFLOW)
    proc = run_cli("check", "kernel.py", "--output-format", "sarif", cwd=tmp_path)
    first = json.loads(proc.stdout)["runs"][0]["results"][0]
    assert first["message"]["text"] == ("`x.isinf().any()` is a CUDA tensor, used as a Python bool; the host waits for "
                                        'the GPU\nbecause: made by torch.randn(...) on "cuda" (high confidence)')
    assert first["properties"] == {"confidence": "high", "context": "code", "because": 'made by torch.randn(...) on "cuda"'}


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_a_folder_without_python_files_says_so(tmp_path, fmt):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no code here\n")
    proc = run_cli("check", "--output-format", fmt, "empty", cwd=tmp_path)
    assert proc.returncode == 0  # as ruff
    assert proc.stderr == "synclint: warning: No Python files found under the given paths\n"
    assert proc.stdout == "No Python files checked.\n"
    assert run_cli("check", "-q", "empty", cwd=tmp_path).stdout == ""


def test_numpy_twin_is_clean(write, tmp_path):
    write("host.py", NUMPY)
    proc = run_cli("check", "host.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "All checks passed!" in proc.stdout


def test_noqa_silences_the_line(write, tmp_path):
    write("kernel.py", OVERFLOW.replace("x.isnan().any():", "x.isnan().any():  # noqa: SYNC101"))
    assert run_cli("check", "kernel.py", cwd=tmp_path).returncode == 0
    write("kernel.py", OVERFLOW.replace("x.isnan().any():", "x.isnan().any():  # noqa: E501, SYNC101"))
    assert run_cli("check", "kernel.py", cwd=tmp_path).returncode == 0
    write("kernel.py", OVERFLOW.replace("x.isnan().any():", "x.isnan().any():  # noqa"))
    assert run_cli("check", "kernel.py", cwd=tmp_path).returncode == 0
    # A noqa for another code leaves the finding.
    write("kernel.py", OVERFLOW.replace("x.isnan().any():", "x.isnan().any():  # noqa: E501"))
    assert run_cli("check", "kernel.py", cwd=tmp_path).returncode == 1


def test_syntax_error_is_sync000_at_its_line(write, tmp_path):
    write("broken.py", "import torch\n\nx = torch.ones(2)\nif x.any(:\n    pass\n")
    write("kernel.py", OVERFLOW)
    proc = run_cli("check", ".", "--output-format", "concise", cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "broken.py:4:" in proc.stdout and "SYNC000 syntax error" in proc.stdout
    assert "kernel.py:4:4: SYNC101" in proc.stdout  # the run went on


def test_syntax_error_shows_its_line_and_no_runtime_syncs(write, tmp_path):
    write("broken.py", "import torch\nif x.any(:\n    pass\n")
    proc = run_cli("check", "broken.py", cwd=tmp_path)
    assert proc.stdout.splitlines()[:4] == [
        "broken.py:2:10: SYNC000 (code) syntax error: invalid syntax",
        "  |",
        "2 | if x.any(:",
        "  |          ^ SYNC000",
    ]
    code, [finding] = run_json("check", "broken.py", cwd=tmp_path)
    assert code == 1 and finding["code"] == "SYNC000" and "runtime_syncs" not in finding


def test_undecodable_bytes_are_sync000_at_their_line(write, tmp_path):
    write("latin.py", b"import torch\nname = '\xff'\n")
    proc = run_cli("check", "latin.py", "--output-format", "concise", cwd=tmp_path)
    assert proc.returncode == 1
    assert "latin.py:2:9: SYNC000 cannot decode byte 0xff as utf-8" in proc.stdout


def test_missing_path_is_exit_2_after_checking_the_rest(write, tmp_path):
    write("kernel.py", OVERFLOW)
    proc = run_cli("check", "kernel.py", "missing.py", "--output-format", "concise", cwd=tmp_path)
    assert proc.returncode == 2
    assert "kernel.py:4:4: SYNC101" in proc.stdout
    assert "missing.py: no such file or directory" in proc.stderr


@pytest.mark.parametrize("fmt", ["text", "concise", "json"])
def test_an_error_run_never_claims_success(write, tmp_path, fmt):
    write("clean.py", "import torch\nx = torch.zeros(1)\n")
    for paths in (["no_such_file.py"], ["clean.py", "no_such_file.py"]):
        proc = run_cli("check", *paths, "--output-format", fmt, cwd=tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert "passed" not in proc.stdout.lower(), proc.stdout
        assert "no_such_file.py: no such file or directory" in proc.stderr
        if fmt != "json":
            assert "1 error; no findings in what could be checked." in proc.stdout
    write("kernel.py", OVERFLOW)
    proc = run_cli("check", "kernel.py", "no_such_file.py", "--output-format", "concise", cwd=tmp_path)
    assert "Found 2 findings, and 1 error: not everything was checked." in proc.stdout


def test_exit_zero_and_statistics(write, tmp_path):
    write("kernel.py", OVERFLOW)
    proc = run_cli("check", "kernel.py", "--exit-zero", "--statistics", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.split() == ["2", "SYNC101", "sync-in-condition", "code", "2", "2", "total", "code", "2"]


def test_statistics_end_with_a_total_line(write, tmp_path):
    write("kernel.py", OVERFLOW)
    write("more.py", "import torch\nx = torch.ones(2, device='cuda')\nprint(x.item())\ntorch.cuda.synchronize()\n")
    lines = run_cli("check", ".", "--statistics", cwd=tmp_path).stdout.splitlines()
    assert [line.split("\t")[:2] for line in lines] == [
        ["     2", "SYNC101"], ["     1", "SYNC107"], ["     1", "SYNC110"], ["     4", "total"]]
    assert run_cli("check", "more.py", "--statistics", "--select", "SYNC104", cwd=tmp_path).stdout == "     0\ttotal\n"


def test_quiet_prints_the_findings_only(write, tmp_path):
    write("kernel.py", OVERFLOW)
    write("clean.py", "x = 1\n")
    proc = run_cli("check", "kernel.py", "-q", "--output-format", "concise", cwd=tmp_path)
    assert proc.returncode == 1 and len(proc.stdout.splitlines()) == 2 and "Found" not in proc.stdout
    proc = run_cli("check", "clean.py", "--quiet", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_select_and_ignore(write, tmp_path):
    write("kernel.py", OVERFLOW)
    assert run_cli("check", "kernel.py", "--ignore", "SYNC1", cwd=tmp_path).returncode == 0
    assert run_cli("check", "kernel.py", "--select", "SYNC101", cwd=tmp_path).returncode == 1
    proc = run_cli("check", "kernel.py", "--select", "SYNC999", cwd=tmp_path)
    assert proc.returncode == 2
    assert "SYNC999" in proc.stderr and "matches no rule" in proc.stderr


def test_min_confidence(write, tmp_path):
    write("model.py", "import torch\n\ndef f(x: torch.Tensor):\n    if x.any():\n        return 1\n")
    assert run_cli("check", "model.py", cwd=tmp_path).returncode == 1  # medium is shown by default
    assert run_cli("check", "model.py", "--min-confidence", "high", cwd=tmp_path).returncode == 0


def test_output_file(write, tmp_path):
    write("kernel.py", OVERFLOW)
    proc = run_cli("check", "kernel.py", "--output-format", "json", "--output-file", "out.json", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert len(json.loads((tmp_path / "out.json").read_text())) == 2


def test_walks_folders_but_skips_venvs_excludes_and_gitignored(write, tmp_path):
    write("pkg/kernel.py", OVERFLOW)
    write("pkg/stub.pyi", OVERFLOW)
    write(".venv/lib/bad.py", OVERFLOW)
    write("env/pyvenv.cfg", "")
    write("env/lib/bad.py", OVERFLOW)
    write("build/bad.py", OVERFLOW)
    write("generated/bad.py", OVERFLOW)
    write("ignored/bad.py", OVERFLOW)
    write(".gitignore", "ignored/\n")
    (tmp_path / ".git").mkdir()
    write("pyproject.toml", '[tool.synclint]\nextend-exclude = ["generated"]\n')
    code, findings = run_json("check", cwd=tmp_path)
    assert code == 1
    assert sorted({f["filename"] for f in findings}) == ["pkg/kernel.py", "pkg/stub.pyi"]
    # A file named explicitly is checked even when excluded, unless --force-exclude.
    assert run_cli("check", "generated/bad.py", cwd=tmp_path).returncode == 1
    assert run_cli("check", "generated/bad.py", "--force-exclude", cwd=tmp_path).returncode == 0


def test_allow_sync_context_is_not_flagged(write, tmp_path):
    write(
        "kernel.py",
        "import torch\nfrom vllm.utils import gpu_sync_allowed\n\nx = torch.ones(2, device='cuda')\n"
        "with gpu_sync_allowed():\n    assert (x > 0).all()\n",
    )
    assert run_cli("check", "kernel.py", cwd=tmp_path).returncode == 0
    write("pyproject.toml", '[tool.synclint]\nallow-sync-contexts = ["my_allowed"]\n')
    assert run_cli("check", "kernel.py", cwd=tmp_path).returncode == 1


def test_rules_and_rule_docs():
    proc = run_cli("rules")
    assert proc.returncode == 0
    assert "| SYNC101 | sync-in-condition |" in proc.stdout
    proc = run_cli("rule", "SYNC101")
    assert proc.returncode == 0
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert heading in proc.stdout
    assert run_cli("rule", "SYNC999").returncode == 2


def test_version_and_usage_errors():
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("synclint ")
    proc = run_cli("check", "--output-format", "xml")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_a_check_leaves_the_cycle_collector_as_it_found_it(write, tmp_path, monkeypatch):
    # `check` pauses the collector while it starts and freezes what starting made; a caller
    # in the same process (a test, a tool that imports synclint) gets it back as it was.
    import gc

    from synclint.cli import main

    path = write("kernel.py", OVERFLOW)
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()
    assert main(["check", "--no-cache", "--output-format", "concise", str(path)]) == 1
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        main(["check", "--no-cache", "--output-format", "concise", str(path)])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_reader_that_stops_early_gets_no_traceback(write, tmp_path):
    # `synclint check | head -1`: the command leaves without tearing the interpreter down
    # (cli.entry_point), and a closed pipe is an exit code, not a traceback.
    import subprocess
    import sys

    import os

    long, short = write("long.py", OVERFLOW * 200), write("short.py", OVERFLOW)
    # A long report meets the closed pipe while it is written; a short one still sits in the
    # (buffered) stream when `main` returns, and meets it when the command flushes on its way out.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    for path, lines_read in ((long, 1), (short, 0)):
        with subprocess.Popen([sys.executable, "-m", "synclint", "check", "--no-cache", "--output-format", "concise",
                               str(path)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            for _ in range(lines_read):
                assert proc.stdout.readline()
            proc.stdout.close()
            stderr = proc.stderr.read().decode()
            assert proc.wait(timeout=60) in (1, 2)
        assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


def test_under_a_tracer_the_command_returns_instead_of_leaving_at_once(write, tmp_path):
    # coverage and cProfile write their results at exit: with one of them on, the command
    # returns its code (cli.entry_point), where it otherwise leaves through os._exit.
    import subprocess
    import sys

    path = write("kernel.py", OVERFLOW)
    script = ("import sys\n"
              "sys.argv = ['synclint', 'check', '--no-cache', {path!r}]\n"
              "{tracer}"
              "from synclint.cli import entry_point\n"
              "code = entry_point()\n"
              "print('returned', code)\n")
    traced = subprocess.run([sys.executable, "-c", script.format(path=str(path), tracer="sys.settrace(lambda *a: None)\n")],
                            capture_output=True, text=True, cwd=tmp_path)
    assert traced.stdout.rstrip().endswith("returned 1"), traced.stderr
    plain = subprocess.run([sys.executable, "-c", script.format(path=str(path), tracer="")],
                           capture_output=True, text=True, cwd=tmp_path)
    assert plain.returncode == 1 and "returned" not in plain.stdout and "SYNC101" in plain.stdout


def test_as_a_process_the_command_exits_with_its_code(write, tmp_path):
    write("kernel.py", OVERFLOW)
    write("clean.py", "x = 1\n")
    assert run_process("check", "kernel.py", cwd=tmp_path).returncode == 1
    assert run_process("check", "clean.py", cwd=tmp_path).returncode == 0
    usage = run_process("check", "--min-confidence", "sure", cwd=tmp_path)
    assert usage.returncode == 2 and usage.stdout == ""
    assert usage.stderr.startswith("synclint: error: argument --min-confidence: invalid choice: 'sure'")


def test_as_a_process_the_command_reads_standard_input(tmp_path):
    proc = run_process("check", "--output-format", "concise", "--stdin-filename", "model.py", "-", cwd=tmp_path,
                       stdin=OVERFLOW)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("model.py:4:4: SYNC101 ")
