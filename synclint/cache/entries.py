"""What the cache stores: a file's result, the project snapshot a run solved, a package's state."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from synclint.cache.signatures import listing, signature


@dataclass(frozen=True)
class Entry:
    findings: list  # list[Finding]: every rule's, at every confidence, in every context (synclint.view filters them)
    warnings: list  # list[str]: unknown noqa codes and the like, shown again on a hit
    summary: bytes | None = None  # the file's ModuleSummary for the project index, pickled, if it was parsed

    @classmethod
    def of(cls, findings: list, warnings: list, summary) -> "Entry":
        return cls(findings, warnings, None if summary is None else pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL))


class Packed:
    """A mapping whose values are kept pickled, each unpickled when asked for: a run over one
    file of a package (pre-commit) reads that file's summary, not the thousands beside it."""

    def __init__(self, values: dict) -> None:
        self._pickled = {key: pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL) for key, value in values.items()}

    def get(self, key, default=None):
        data = self._pickled.get(key)
        return default if data is None else pickle.loads(data)


@dataclass(frozen=True)
class ProjectSnapshot:
    """The project index a run over a whole package solved, keyed by every indexed file's entry
    key: a run over the same files (or one of them, as pre-commit gives) starts from it instead
    of from each file's entry."""

    index: object  # synclint.project.index.ProjectIndex (ProjectIndex.snapshot)
    summaries: Packed  # shown path -> ModuleSummary (ProjectIndex.snapshot's): what `answers_for` reads of each


@dataclass(frozen=True)
class PackageState:
    """What the last run over a package (all of it, or some files with the rest indexed) knew of
    it, for a run over some of its files (pre-commit after an edit): the solved index, each
    file's summary, and the multimodal fields each module declares. The files not checked are
    taken as that run saw them while they and the folders are unchanged (`is_current`): a
    `stat` per file instead of reading and indexing them."""

    package_files: frozenset  # absolute paths of the package's Python files
    files: dict  # absolute path -> signatures.Signature: the package's files, and the marker files above them
    folders: dict  # walked folder -> its entry names: a file added, removed or renamed makes the state stale
    index: object  # synclint.project.index.ProjectIndex, solved over every file of the run (ProjectIndex.snapshot)
    declarations: dict  # module -> project.field_declarations, of the modules that declare any
    summaries: Packed  # shown path -> ModuleSummary (ProjectIndex.snapshot's): what `answers_for` reads of each

    def is_current(self, checked: set[str]) -> bool:
        """Whether every file but the `checked` ones, and every folder, is as the run saw it."""
        try:
            return (all(listing(folder) == names for folder, names in self.folders.items())
                    and all(signature(path) == known for path, known in self.files.items() if path not in checked))
        except OSError:
            return False
