"""Progress on a terminal for runs longer than about a second; never in a pipe, with `CI` set,
with --quiet, or when a machine format goes to standard output.

The runs on a pseudo-terminal (the `pty` module) are real processes with the display's delay
set to 0 (`synclint.progress.DELAY_S`), so that a run of a few files shows it; the delay
itself is tested in this process.
"""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
import time

import pytest

from synclint import progress

pty = pytest.importorskip("pty")

NO_DELAY = "import sys, synclint.progress as p; p.DELAY_S = 0; from synclint.cli import main; sys.exit(main())"
MODEL = "import torch\n\n\ndef step(x: torch.Tensor):\n    return x.sum().item()\n"


@pytest.fixture
def package(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for i in range(6):
        (tmp_path / "pkg" / f"m{i}.py").write_text(MODEL)
    return tmp_path


def environment(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in ("CI", "NO_COLOR", "TERM")}
    return {**env, "TERM": "xterm-256color", "COLUMNS": "120", **extra}


def on_terminal(args: list[str], cwd, **env: str) -> tuple[int, str]:
    """Run `synclint ARGS` with its standard streams on a pseudo-terminal: its exit code and all it drew."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", NO_DELAY, *args], cwd=cwd, env=environment(**env),
                            stdin=secondary, stdout=secondary, stderr=secondary, close_fds=True)
    os.close(secondary)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([primary], [], [], 0.2)
            if ready:
                try:
                    data = os.read(primary, 65536)
                except OSError:  # the other end closed (Linux raises EIO)
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        proc.wait(timeout=120)
    finally:
        os.close(primary)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def drew_progress(drawn: str) -> bool:
    """Whether a progress line (`3/7 files`, colours or not) was drawn."""
    return re.search(r"\d+/\d+(\x1b\[0m)? files", drawn) is not None


def in_pipes(args: list[str], cwd, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", NO_DELAY, *args], cwd=cwd, env=environment(**env),
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_terminal_shows_the_phase_files_done_and_total_and_elapsed(package):
    code, drawn = on_terminal(["check", "--no-cache", "-j", "1", "pkg"], package)
    assert code == 1, drawn
    # The first look at the package indexes all of it, once, for project analysis.
    assert "checking; indexing pkg once for project analysis" in drawn
    assert re.search(r"7/7(\x1b\[0m)? files", drawn) and "0:0" in drawn  # files done and total, elapsed
    # Erased before the report, which follows it.
    assert drawn.rindex(" files ") < drawn.index("SYNC107") < drawn.index("Found 6 findings.")


def test_one_file_of_a_package_never_indexed_shows_what_it_indexes(package):
    code, drawn = on_terminal(["check", "--no-cache", "-j", "1", "pkg/m0.py"], package)
    assert code == 1, drawn
    # Only what the file uses of the package (here nothing: the file alone).
    assert "checking; indexing what the files use of pkg" in drawn
    assert re.search(r"1/1(\x1b\[0m)? files", drawn)
    assert drawn.rindex(" files ") < drawn.index("SYNC107") < drawn.index("Found 1 finding.")


def test_a_warm_run_shows_no_indexing(package):
    in_pipes(["check", "pkg"], package)
    code, drawn = on_terminal(["check", "-j", "1", "--output-format", "concise", "pkg"], package)
    assert code == 1 and "indexing" not in drawn


@pytest.mark.parametrize("case", ["pipe", "CI", "quiet", "json", "github"])
def test_no_progress_where_it_does_not_belong(package, case):
    args = ["check", "--no-cache", "-j", "1", "pkg"]
    if case == "pipe":
        proc = in_pipes(args, package)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert not drew_progress(proc.stderr) and "\x1b" not in proc.stderr + proc.stdout, proc.stderr
        return
    env = {"CI": "true"} if case == "CI" else {}
    extra = ["--quiet"] if case == "quiet" else [] if case == "CI" else ["--output-format", case]
    code, drawn = on_terminal([*args, *extra], package, **env)
    assert code == 1
    assert not drew_progress(drawn) and "\x1b[?25l" not in drawn  # (rich hides the cursor while it draws)


def test_a_report_to_a_file_leaves_the_terminal_to_the_progress(package):
    code, drawn = on_terminal(["check", "--no-cache", "-j", "1", "--output-format", "json", "-o", "report.json", "pkg"],
                              package)
    assert code == 1 and drew_progress(drawn)
    assert (package / "report.json").read_text().startswith("[")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_before_the_delay(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress.Progress(True, delay=0.5) as shown:
        shown.phase("checking", 10)(3)
    assert terminal.getvalue() == ""  # a run shorter than the delay draws nothing
    with progress.Progress(True, delay=0.05) as shown:
        advance = shown.phase("checking", 10)
        advance(3)
        time.sleep(0.3)
        assert "3/10" in terminal.getvalue()
    assert not progress.Progress(False, delay=0).enabled
