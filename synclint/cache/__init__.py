"""What synclint keeps between runs, in `.synclint_cache` (or `--cache-dir`), one job per module:

    signatures  a file's `os.stat` signature and a folder's listing: how a run tells what changed
    store       the content-addressed store: entries named by the hash of what decides them,
                written by atomic rename, never modified; `synclint clean` removes it
    entries     what is stored: a file's findings and summary, a package state
    replay      records of whole runs, replayed when none of their inputs changed (the warm run)

The replay path imports nothing heavier than `pickle`: a warm run prints its record without
importing libcst.
"""
