"""How a run tells what changed on disk: a path's `os.stat` signature, a folder's listing."""

from __future__ import annotations

import os

Signature = tuple[int, int, int, int] | None  # (mtime_ns, size, inode, mode); None: absent


def signature(path: str) -> Signature:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)


def listing(folder: str) -> tuple[str, ...]:
    """The names in `folder`, sorted: what `PackageState.folders` keeps of each (OSError: unreadable)."""
    return tuple(sorted(os.listdir(folder)))
