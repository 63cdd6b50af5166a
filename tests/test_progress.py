"""Progress on standard error: a bar when it is a terminal, for runs longer than about a second;
elsewhere (a pipe, `CI` set) a line every so often; nothing with --quiet. Its total never goes back.

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

NO_DELAY = ("import sys, synclint.progress as p; p.DELAY_S = 0; p.EVERY_S = 0.01; from synclint.cli import main; "
            "sys.exit(main())")
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


def on_terminal(args: list[str], cwd, stdout=None, **env: str) -> tuple[int, str]:
    """Run `synclint ARGS` with its standard streams on a pseudo-terminal (standard output on
    `stdout` instead, if given): its exit code and all it drew."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", NO_DELAY, *args], cwd=cwd, env=environment(**env),
                            stdin=secondary, stdout=stdout or secondary, stderr=secondary, close_fds=True)
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
    assert drawn.rindex(" files ") < drawn.index("SYNC107") < drawn.index("Found 6 findings: 6 per step.")


def test_one_file_of_a_package_never_indexed_shows_what_it_indexes(package):
    code, drawn = on_terminal(["check", "--no-cache", "-j", "1", "pkg/m0.py"], package)
    assert code == 1, drawn
    # Only what the file uses of the package (here nothing: the file alone).
    assert "checking; indexing what the files use of pkg" in drawn
    assert re.search(r"1/1(\x1b\[0m)? files", drawn)
    assert drawn.rindex(" files ") < drawn.index("SYNC107") < drawn.index("Found 1 finding: 1 per step.")


def test_a_warm_run_shows_no_indexing(package):
    in_pipes(["check", "pkg"], package)
    code, drawn = on_terminal(["check", "-j", "1", "--output-format", "concise", "pkg"], package)
    assert code == 1 and "indexing" not in drawn


@pytest.mark.parametrize("case", ["CI", "quiet"])
def test_no_bar_where_it_does_not_belong(package, case):
    env = {"CI": "true"} if case == "CI" else {}
    extra = ["--quiet"] if case == "quiet" else []
    code, drawn = on_terminal(["check", "--no-cache", "-j", "1", "pkg", *extra], package, **env)
    assert code == 1
    assert "\x1b[?25l" not in drawn  # (rich hides the cursor while it draws)
    lines = [line for line in drawn.splitlines() if line.startswith("synclint: checking")]
    assert bool(lines) == (case == "CI")  # a CI log gets lines instead, --quiet nothing


@pytest.mark.parametrize("case", ["json", "github", "stdout to a file", "report to a file"])
def test_a_terminal_on_standard_error_shows_the_bar_wherever_the_report_goes(package, case, tmp_path):
    args = ["check", "--no-cache", "-j", "1", "pkg"]
    with open(tmp_path / "out.txt", "w") as out:
        if case == "stdout to a file":
            code, drawn = on_terminal(args, package, stdout=out)
        elif case == "report to a file":
            code, drawn = on_terminal([*args, "--output-format", "json", "-o", "report.json"], package)
        else:
            code, drawn = on_terminal([*args, "--output-format", case], package)
    assert code == 1 and drew_progress(drawn), drawn
    if case == "stdout to a file":
        assert "Found 6 findings: 6 per step." in (tmp_path / "out.txt").read_text() and "Found" not in drawn
    if case == "report to a file":
        assert (package / "report.json").read_text().startswith("[")
    if case == "json":  # erased before the report: what follows the bar is the report alone
        assert drawn.rindex(" files ") < drawn.index('"code": "SYNC107"')


def test_a_pipe_gets_a_line_every_so_often_on_standard_error(package):
    proc = in_pipes(["check", "--no-cache", "-j", "1", "--output-format", "json", "pkg"], package)
    assert proc.returncode == 1 and proc.stdout.startswith("[")
    assert "\x1b" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert lines, proc.stderr
    for line in lines:
        assert re.fullmatch(r"synclint: (starting|checking; indexing pkg once for project analysis): \d+/\d+ files "
                            r"\(0:\d\d\)", line), line
    assert in_pipes(["check", "--no-cache", "-q", "pkg"], package).stderr == ""


def test_the_lines_say_the_phase_the_files_and_the_time(monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress.Progress("lines", every=0.05) as shown:
        advance = shown.phase("checking", 10)
        advance(3)
        time.sleep(0.3)
    written = terminal.getvalue().splitlines()
    assert written and set(written) == {"synclint: checking: 3/10 files (0:00)"}
    with progress.Progress("lines", every=60) as shown:
        shown.phase("checking", 10)(3)
    assert terminal.getvalue().splitlines() == written  # nothing before the first interval, nor after the end


class Recorder(progress.Progress):
    """No display: what it would show after each call."""

    def __init__(self, *args) -> None:
        super().__init__("lines", every=3600)
        self.seen: list[tuple[str, int, int]] = []

    def phase(self, label: str, total: int, done: int = 0):
        advance = super().phase(label, total, done)
        self.seen.append(self.shown())

        def recorded(n: int) -> None:
            advance(n)
            self.seen.append(self.shown())

        return recorded


def test_the_total_never_goes_back_when_a_second_look_begins(package, monkeypatch):
    (package / "pkg" / "meta.py").write_text(
        "import torch\n\n\nclass Meta:\n    def __init__(self):\n        self.lens = torch.zeros(4, device='cuda')\n\n"
        "    @property\n    def lens_cpu(self):\n        return self.lens.to('cpu')\n")
    (package / "pkg" / "user.py").write_text(
        "import torch\n\nfrom pkg.meta import Meta\n\n\ndef plan(meta: Meta):\n    return meta.lens_cpu\n")
    recorder = Recorder()
    monkeypatch.setattr(progress, "Progress", lambda *args, **kwargs: recorder)
    monkeypatch.chdir(package)
    from synclint.cli import main

    assert main(["check", "--no-cache", "-j", "1", "-q", "pkg"]) == 1
    labels = [label for label, _, _ in recorder.seen]
    assert "project analysis: a second look at the files that use other files' facts" in labels
    assert recorder.seen[-1][1:] == (10, 10)  # the 9 files, and the one looked at again
    for (_, done, total), (_, done_after, total_after) in zip(recorder.seen, recorder.seen[1:]):
        assert done_after >= done and total_after >= total


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_before_the_delay(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress.Progress("bar", delay=0.5) as shown:
        shown.phase("checking", 10)(3)
    assert terminal.getvalue() == ""  # a run shorter than the delay draws nothing
    with progress.Progress("bar", delay=0.05) as shown:
        advance = shown.phase("checking", 10)
        advance(3)
        time.sleep(0.3)
        assert "3/10" in terminal.getvalue()
    assert not progress.Progress(None, delay=0).enabled


def test_which_display(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stderr", Terminal())
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # a file or a pipe: the bar all the same
    assert progress.display(quiet=False) == "bar"
    assert progress.display(quiet=True) is None and progress.display(quiet=False, stdin=True) is None
    monkeypatch.setenv("CI", "true")
    assert progress.display(quiet=False) == "lines"
    monkeypatch.delenv("CI")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.display(quiet=False) == "lines"


@pytest.mark.parametrize("width", [80, 60])
def test_the_bar_keeps_files_done_total_and_time_whole_on_a_narrow_terminal(width):
    import io
    import time

    from rich.console import Console

    from synclint.progress import make_bar

    console = Console(file=io.StringIO(), width=width, force_terminal=False)
    bar = make_bar(console, time.monotonic() - 75)
    bar.add_task("project analysis: a second look at the files that use other files' facts", total=13456,
                 completed=1234)
    console.print(bar.make_tasks_table(bar.tasks))
    first, *more = console.file.getvalue().splitlines()
    assert all(len(line) <= width for line in [first, *more])
    assert first.startswith("project analysis: a") and first.endswith(" 1234/13456 files 1:15")
    # The phase goes on over the lines below, whole: nothing of it is cut.
    label = " ".join(re.sub(r"\s*[━╸╺].*$", "", line).strip() for line in [first, *more])
    assert label == "project analysis: a second look at the files that use other files' facts"


def test_a_phase_naming_a_long_package_is_whole_at_80_columns():
    import io
    import time

    from rich.console import Console

    from synclint.progress import make_bar

    console = Console(file=io.StringIO(), width=80, force_terminal=False)
    bar = make_bar(console, time.monotonic() - 5)
    bar.add_task("checking; indexing speechbrain once for project analysis", total=727, completed=120)
    console.print(bar.make_tasks_table(bar.tasks))
    lines = console.file.getvalue().splitlines()
    assert lines[0].endswith(" 120/727 files 0:05") and "…" not in "".join(lines)
    words = " ".join(re.sub(r"\s*[━╸╺].*$", "", line).strip() for line in lines).split()
    assert words == "checking; indexing speechbrain once for project analysis".split()
