"""`python -m synclint.server.niced ARGS...` is `synclint ARGS...` at a lower CPU priority: the
server's index runs (`indexer`), which leave the cores to the checks of the file being edited.
Nothing imports this module; it is a process's entry."""

from __future__ import annotations

import os
import sys

NICENESS = 10


def main(argv: list[str]) -> int:
    try:
        os.nice(NICENESS)
    except OSError:
        pass
    from synclint.cli import main as synclint

    return synclint(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
