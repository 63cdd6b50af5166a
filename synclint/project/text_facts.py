"""What a run learns of a package from its files' bytes, before any file is parsed: which
multimodal inputs its declarations keep on the CPU (vLLM's `MultiModalFieldConfig.*(...,
keep_on_cpu=True)`), for every file that handles multimodal inputs.

(Whether the package puts data on the GPU somewhere was measured here too, as evidence that
its tensors of unknown device are there: on six projects judged by readers who had not seen
synclint's reasons, 6 of 19 such findings were real. It is not evidence enough; see
bench/README.md, "Calibration".)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from synclint.devices.conventions import field_declarations, host_field_names
from synclint.project.facts import ProjectFile
from synclint.project.placement import imported_modules

Declarations = tuple[frozenset[str], frozenset[str]]  # conventions.field_declarations

_MULTIMODAL = (b"ultimodal", b"ultiModal", b"ulti_modal", b"ULTIMODAL", b"ULTI_MODAL")  # (m|M)ultimodal, ...


def with_text_facts(files: list[tuple[Path, ProjectFile]], read: Callable[[Path], bytes],
                    declarations_elsewhere: dict[str, Declarations] | None = None,
                    ) -> tuple[list[ProjectFile], dict[str, Declarations]]:
    """Each file's place in the project with the multimodal inputs it keeps on the CPU added:
    those that every declaration in the project keeps there, and those its own file or the
    project modules it imports (a model's processor) keep there. Returns those, and the
    declarations of each module. `declarations_elsewhere`: what a kept state knew of modules
    not among `files`."""
    declared: dict[int, Declarations] = {}
    multimodal: dict[int, bytes] = {}
    for i, (path, _) in enumerate(files):
        try:
            data = read(path)
        except OSError:
            continue  # its check reports it
        if any(word in data for word in _MULTIMODAL):  # (`MultiModalFieldConfig` has one)
            multimodal[i] = data
            declared[i] = field_declarations(data)
        else:
            declared[i] = (frozenset(), frozenset())
    by_module = dict(declarations_elsewhere or {})
    for i, (_, project) in enumerate(files):
        if project.module and i in declared:
            by_module[project.module] = declared[i]
    unplaced = [found for i, found in declared.items() if not files[i][1].module]
    everywhere = host_field_names([*by_module.values(), *unplaced])
    placed = []
    for i, (_, project) in enumerate(files):
        if i in multimodal:
            near = [declared[i], *(by_module[m] for m in sorted(imported_modules(multimodal[i], project.package))
                                   if m in by_module and m != project.module)]
            fields = everywhere | host_field_names(near)
            if fields:
                project = replace(project, host_fields=fields)
        placed.append(project)
    return placed, by_module
