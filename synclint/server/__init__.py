"""`synclint server`: a Language Server Protocol server over standard input and output.

It is the flow of `synclint check --stdin-filename` for one buffer at a time, kept warm: the same
engine, settings, project index, cache and fix engine, with LSP as its report format. It needs
pygls, which the `server` extra installs (`pip install 'synclint[server]'`); the linter itself
does not.

  app.py      the LSP side: messages, debounced checks, publishing, progress, exit
  session.py  settings, packages' facts and checks of one buffer, without LSP
  indexer.py  a package indexed by a `synclint check` run in another process
  niced.py    that run's entry: `synclint check` at a lower CPU priority
  actions.py  code actions: a fix, `# noqa`, fix all safe fixes
  convert.py  findings, fixes and positions as LSP values
"""

from __future__ import annotations

EXTRA = "synclint[server]"


def missing_extra() -> str | None:
    """What to tell a user whose synclint lacks the server's dependencies (None: it has them)."""
    try:
        import lsprotocol.types  # noqa: F401
        import pygls.lsp.server  # noqa: F401
    except ImportError:
        return f"`synclint server` needs pygls, which the server extra installs: pip install '{EXTRA}'"
    return None

