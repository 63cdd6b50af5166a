"""`synclint server`: a Language Server Protocol server over standard input and output.

It is the flow of `synclint check --stdin-filename` for one buffer at a time, kept warm: the same
engine, settings, project index, cache and fix engine, with LSP as its report format. It needs
pygls, which the `server` extra installs (`pip install '<your clone of synclint>[server]'`); the linter itself
does not.

  app.py      the LSP side: messages, debounced checks, publishing, progress, exit
  session.py  settings, packages' facts and checks of one buffer, without LSP
  indexer.py  a package indexed by a `synclint check` run in another process
  niced.py    that run's entry: `synclint check` at a lower CPU priority
  actions.py  code actions: a fix, `# noqa`, fix all safe fixes
  convert.py  findings, fixes and positions as LSP values
"""

from __future__ import annotations

from pathlib import Path

def install_command() -> str:
    """How to install the server extra into this synclint: synclint is on no package index, so
    from its clone: this one's folder when it runs from a clone (an editable install, a
    checkout), else the clone it was installed from, which only the user knows."""
    home = Path(__file__).resolve().parent.parent.parent
    try:
        ours = 'name = "synclint"' in (home / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        ours = False
    return f"pip install '{home}[server]'" if ours else "pip install '<your clone of synclint>[server]'"


def missing_extra() -> str | None:
    """What to tell a user whose synclint lacks the server's dependencies (None: it has them)."""
    try:
        import lsprotocol.types  # noqa: F401
        import pygls.lsp.server  # noqa: F401
    except ImportError:
        return f"`synclint server` needs pygls, which the server extra installs: {install_command()}"
    return None
