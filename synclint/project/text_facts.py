"""What a run learns of a package from its files' bytes, before any file is parsed: which
multimodal inputs its declarations keep on the CPU, and whether it runs on GPUs.

"Runs on GPUs" is a fact about the package, not about one file: a metrics library's `update`,
a trainer's callbacks, an optimizer's grad-norm helper never say where their tensors live, but
the package they belong to moves its models or data to an accelerator somewhere (`torch.cuda`,
`.cuda()`, `device="cuda"`, `torch.accelerator`, `get_accelerator()`, `Accelerator()`), or is
built on a framework that does (accelerate, Lightning, DeepSpeed). There a tensor of unknown
device is on the GPU unless the code shows it is on the host (synclint.devices.evaluate).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from synclint.devices.conventions import field_declarations, host_field_names
from synclint.project.facts import ProjectFile
from synclint.project.placement import imported_modules, package_root

Declarations = tuple[frozenset[str], frozenset[str]]  # conventions.field_declarations

_MULTIMODAL = (b"ultimodal", b"ultiModal", b"ulti_modal", b"ULTIMODAL", b"ULTI_MODAL")  # (m|M)ultimodal, ...

# Code that puts models or data on an accelerator, or imports a framework that does. Comments
# and strings are not told apart from code: the words are specific enough.
_GPU_CODE = re.compile(
    rb"""torch\.cuda\b|\.cuda\(|\bdevice\s*=\s*["']cuda|\.to\(\s*["']cuda|torch\.accelerator\b|\bget_accelerator\(|"""
    rb"""\bAccelerator\(|\bFabric\(|^[ \t]*(?:import|from)[ \t]+(?:accelerate|lightning|pytorch_lightning|deepspeed)\b""",
    re.MULTILINE,
)


def gpu_evidence(data: bytes) -> str | None:
    """The first code in a file's bytes that says its package runs on GPUs, or None."""
    found = _GPU_CODE.search(data)
    if found is None:
        return None
    return " ".join(found.group(0).decode("utf-8", "replace").split())


def with_text_facts(files: list[tuple[Path, ProjectFile]], read: Callable[[Path], bytes],
                    declarations_elsewhere: dict[str, Declarations] | None = None,
                    gpu_elsewhere: dict[str, str] | None = None,
                    ) -> tuple[list[ProjectFile], dict[str, Declarations], dict[str, str]]:
    """Each file's place in the project with what the package's text says added: the multimodal
    inputs it keeps on the CPU (those that every declaration in the project keeps there, and
    those its own file or the project modules it imports keep there), and why its package runs
    on GPUs (none for a file outside a package). Returns those,
    the declarations of each module, and the reason of each package that runs on GPUs (by its
    root folder). `*_elsewhere`: what a kept state knew of files not among `files`."""
    declared: dict[int, Declarations] = {}
    multimodal: dict[int, bytes] = {}
    gpu: dict[str, tuple[str, str]] = {}  # root -> (path, why): the first file in path order
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
        root = package_root(path)
        if root is not None:
            why = gpu_evidence(data)
            key, shown = os.fspath(root), os.path.relpath(os.path.abspath(path), os.path.dirname(root))
            if why is not None and (key not in gpu or shown < gpu[key][0]):
                gpu[key] = (Path(shown).as_posix(), why)
    reasons = dict(gpu_elsewhere or {})
    reasons.update({root: f"`{why}` in {shown}" for root, (shown, why) in gpu.items()})
    by_module = dict(declarations_elsewhere or {})
    for i, (_, project) in enumerate(files):
        if project.module and i in declared:
            by_module[project.module] = declared[i]
    unplaced = [found for i, found in declared.items() if not files[i][1].module]
    everywhere = host_field_names([*by_module.values(), *unplaced])
    placed = []
    for i, (path, project) in enumerate(files):
        fields: frozenset[str] = frozenset()
        if i in multimodal:
            near = [declared[i], *(by_module[m] for m in sorted(imported_modules(multimodal[i], project.package))
                                   if m in by_module and m != project.module)]
            fields = everywhere | host_field_names(near)
        root = package_root(path) if project.module else None
        runs_on_gpus = reasons.get(os.fspath(root), "") if root is not None else ""
        if fields or runs_on_gpus:
            project = replace(project, host_fields=fields, gpu_package=runs_on_gpus)
        placed.append(project)
    return placed, by_module, reasons
