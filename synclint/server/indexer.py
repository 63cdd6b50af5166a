"""Indexing a package for the server: a `synclint check` run over it, in its own process.

The facts of a package's files (syncing properties, helpers that sync, device returns) are what a
run over the package leaves in the cache (`cache.PackageState`), and a CLI run and the server
share them: whichever runs first fills the cache for the other. So the server indexes a package
by running exactly that command, from the workspace folder, into the same cache, with its
output thrown away. In its own process it cannot stall the editor's requests, its memory goes
back when it ends, and a lower CPU priority (`nice`) leaves the cores to the checks of the file
being edited. Its process pool forks from a process with no threads, which the server's is not.

The run is `python -m synclint.server.niced check ARGS...` (see there).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

logger = logging.getLogger(__name__)


def command(root: Path, cwd: Path, cache_dir: Path, jobs: int) -> list[str]:
    """The command that indexes the package at `root` as `synclint check` run from `cwd` would."""
    try:
        target = os.fspath(root.relative_to(cwd))
    except ValueError:
        target = os.fspath(root)
    return [sys.executable, "-m", "synclint.server.niced", "check", "--exit-zero", "--output-format", "concise",
            "--output-file", os.devnull, "--cache-dir", os.fspath(cache_dir), "--jobs", str(jobs), target]


def environment() -> dict[str, str]:
    """The server's environment, with the folder its own `synclint` came from first on the
    path. The run must be the same code as the server: the cache keys hold the code's
    fingerprint, and a server started as `python -m synclint server` in a checkout imports
    the checkout while a run started from the workspace would import the installed copy."""
    import synclint

    home = os.fspath(Path(synclint.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([home, path]) if path else home)


class Runs:
    """The index runs in flight, one per package root, ended together when the server stops."""

    def __init__(self) -> None:
        self.processes: set[asyncio.subprocess.Process] = set()

    async def run(self, root: Path, cwd: Path, cache_dir: Path, jobs: int) -> int:
        """Run the index of `root` to its end; its exit status (2 also when some file could not
        be checked: the rest of the package is indexed all the same)."""
        cmd = command(root, cwd, cache_dir, jobs)
        logger.info("indexing %s: %s", root, " ".join(cmd))
        process = await asyncio.create_subprocess_exec(
            *cmd, cwd=cwd, env=environment(), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,  # its workers end with it (`stop`)
        )
        self.processes.add(process)
        try:
            _, err = await process.communicate()
        finally:
            self.processes.discard(process)
        for line in err.decode("utf-8", "replace").splitlines()[:50]:
            logger.info("index of %s: %s", root.name, line)
        return process.returncode if process.returncode is not None else 2

    def stop(self) -> None:
        for process in list(self.processes):
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass

