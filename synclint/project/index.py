"""The project index: every file's summary joined, solved to a fixpoint over the call graph.

`ProjectIndex` computes, recursion included, a `Chain` for every function that syncs,
directly or through the functions it calls, and the place each function's result lives;
then gives each file its `Answers`: only the facts about the names it uses from other
files. A file whose answers are empty needs no second look (see `synclint.project.run`).
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TypeVar

from synclint.devices.lattice import Place, Where, join
from synclint.evidence import Certainty
from synclint.project import how_often
from synclint.project.facts import (
    NO_ANSWERS,
    Chain,
    ClassSummary,
    FunctionFact,
    FunctionSummary,
    ModuleSummary,
    Answers,
    PropertyFact,
    SyncSite,
    short_name,
)


_T = TypeVar("_T")


def resolve_in(functions: dict[str, FunctionSummary], classes: dict[str, ClassSummary], qualname: str,
               resolved: dict[str, str | None]) -> str | None:
    """The function of `functions` a called name means: itself, or a method found through the
    class's bases in `classes` (`resolved` remembers the answers)."""
    if qualname in resolved:
        return resolved[qualname]
    resolved[qualname] = None  # a cycle of bases resolves to nothing
    found = None
    if qualname in functions:
        found = qualname
    else:
        owner, _, name = qualname.rpartition(".")
        cls = classes.get(owner)
        if cls is not None:
            for base in cls.bases:
                found = resolve_in(functions, classes, f"{base}.{name}", resolved)
                if found is not None:
                    break
    resolved[qualname] = found
    return found


class ProjectIndex:
    """The summaries of many modules, and what follows from them (`solve`)."""

    def __init__(self, summaries: Iterable[ModuleSummary], external: Answers | None = None) -> None:
        self.external = external or NO_ANSWERS
        self.functions: dict[str, FunctionSummary] = {}
        self.classes: dict[str, ClassSummary] = {}
        self.host_keywords: dict[tuple[str, str], str] = {}  # (name, keyword) -> a call passing a host tensor
        on_device: set[tuple[str, str]] = set()
        # In the order of their modules, not of the run's files: the files named in another
        # order, or finished in another order, solve to the same facts.
        summaries = sorted(summaries, key=lambda summary: (summary.module, summary.path))
        for summary in summaries:
            self.functions.update(summary.functions)
            self.classes.update(summary.classes)
            for key, (example, device_seen) in summary.keyword_args.items():
                if device_seen:
                    on_device.add(key)
                elif example is not None and (key not in self.host_keywords or example < self.host_keywords[key]):
                    # The first by its text, not by the files' order: when another look at one
                    # file adds or drops an example, the others' answers keep theirs.
                    self.host_keywords[key] = example
        for key in on_device:
            self.host_keywords.pop(key, None)
        self.functions = dict(sorted(self.functions.items()))
        self.classes = dict(sorted(self.classes.items()))
        self._resolved: dict[str, str | None] = {}
        self.chains: dict[str, Chain] = {}
        self.returns: dict[str, Where] = {}
        self._attrs: dict[str, dict[str, Where]] = {}
        self._properties: dict[str, list[PropertyFact]] | None = None
        self._fields: set[str] | None = None
        # Each fact only from those before it: what functions return, what callers pass them,
        # then which of them sync (a sync is as sure as what the value it reads came from).
        self._solve_returns()
        self.device_params = self._solve_device_params()
        self._solve_chains()
        self.frequency = how_often.solve(self.functions, self.classes, self.resolve, self.ancestors, summaries)

    # ---- resolution ------------------------------------------------------------------

    def resolve(self, qualname: str) -> str | None:
        """The function a called name means: itself, or a method found through the class's bases."""
        return resolve_in(self.functions, self.classes, qualname, self._resolved)

    def fact(self, qualname: str) -> FunctionFact | None:
        """What calling `qualname` does, from this index or from the external answers."""
        target = self.resolve(qualname)
        if target is None:
            return self.external.functions.get(qualname)
        func = self.functions[target]
        return FunctionFact(target, func.path, func.row, self.chains.get(target), self.returns.get(target),
                            func.is_property, func.deprecated)

    def class_attrs(self, qualname: str) -> dict[str, Where]:
        """`self.x` facts of a class, its bases' first (an attribute a subclass sets wins)."""
        if qualname in self._attrs:
            return self._attrs[qualname]
        external = self.external.class_attrs.get(qualname)
        if external is not None and qualname not in self.classes:
            return external
        attrs: dict[str, Where] = {}
        self._attrs[qualname] = attrs  # a cycle of bases sees a partial answer
        cls = self.classes.get(qualname)
        if cls is not None:
            for base in cls.bases:
                attrs.update(self.class_attrs(base))
            attrs.update(cls.attrs)
        return attrs

    def ancestors(self, qualname: str) -> list[str]:
        """The class and every base known here or in the external answers, nearest first."""
        seen: list[str] = []
        pending = [qualname]
        while pending:
            name = pending.pop(0)
            if name in seen:
                continue
            seen.append(name)
            cls = self.classes.get(name)
            pending.extend(cls.bases if cls is not None else self.external.class_bases.get(name, ()))
        return seen

    def is_known_class(self, qualname: str) -> bool:
        return qualname in self.classes or qualname in self.external.class_bases

    # ---- the fixpoint ------------------------------------------------------------------

    def _solve_chains(self) -> None:
        callers: dict[str, list[str]] = {}
        pending: deque[str] = deque()
        for qual, func in self.functions.items():
            for callee in func.calls:
                target = self.resolve(callee)
                if target is not None:
                    callers.setdefault(target, []).append(qual)
                else:
                    self._seed_external(qual, callee, pending, properties_only=False)
            for read in func.reads:
                target = self.resolve(read)
                if target is not None and self.functions[target].is_property:
                    callers.setdefault(target, []).append(qual)
                elif target is None:
                    self._seed_external(qual, read, pending, properties_only=True)
            site = self._surest_sync(qual, func)
            if site is not None:
                self.chains[qual] = Chain((qual,), site, site.certainty)
                pending.append(qual)
        # Breadth first from the functions that sync: every caller gets the shortest chain.
        while pending:
            callee = pending.popleft()
            chain = self.chains[callee]
            for caller in callers.get(callee, ()):
                if caller not in self.chains:
                    self.chains[caller] = chain.called_by(caller)
                    pending.append(caller)

    def how_often(self, qualname: str | None) -> how_often.Frequency | None:
        """How often function `qualname` runs, as solved over the call graph (None: not a project function)."""
        return self.frequency.get(qualname) if qualname is not None else None

    def _surest_sync(self, qual: str, func: FunctionSummary) -> SyncSite | None:
        """The surest of the function's syncs (the first among equals), each as sure as the
        surest GPU tensor its value may come from (`SyncSite.depends`)."""
        sites = []
        for site in (func.sync, *func.syncs_if):
            if site is None:
                continue
            found = self._answer(qual, site.depends)
            sites.append(replace(site, certainty=found.certainty)
                         if found is not None and found.certainty > site.certainty else site)
        return min(sites, key=SyncSite.rank, default=None)

    def _answer(self, qual: str, depends: tuple[str, ...],
                passed: dict[str, dict[str, Where]] | None = None) -> Where | None:
        """The surest GPU tensor (medium or high) that a value of function `qual` that may come
        from `depends` (`SyncSite.depends`) can be: what a project function returns, what the
        function's callers pass its parameter (`passed`, default: the solved facts)."""
        passed = self.device_params if passed is None else passed
        best: Where | None = None
        for term in depends:
            kind, _, name = term.partition(":")
            if kind == "param":
                found = passed.get(qual, {}).get(name)
                if found is not None:
                    # As a parameter a caller fills with a GPU tensor is taken (flow.py): medium at most.
                    found = Where(Place.DEVICE, min(found.certainty, Certainty.MEDIUM),
                                  f"{short_name(qual)}() is given `{name}` on the GPU ({found.because})")
            else:
                found = self._returned(name)
                if found is not None:
                    found = Where(found.place, found.certainty,
                                  f"`{short_name(name)}(...)` returns a GPU tensor ({found.because})")
            if (found is not None and found.on_device and found.certainty >= Certainty.MEDIUM
                    and (best is None or found.certainty > best.certainty)):
                best = found
        return best

    def _seed_external(self, caller: str, callee: str, pending: deque[str], properties_only: bool) -> None:
        fact = self.external.functions.get(callee)
        if fact is None or fact.chain is None or (properties_only and not fact.is_property):
            return
        if caller not in self.chains:
            self.chains[caller] = fact.chain.called_by(caller)
            pending.append(caller)

    def _solve_returns(self) -> None:
        for qual, func in self.functions.items():
            if func.returns is not None:
                self.returns[qual] = func.returns
        symbolic = [(q, f) for q, f in self.functions.items() if f.returns is None and f.returns_calls]
        for _ in range(10):  # chains of helpers returning helpers' results; bounded
            changed = False
            for qual, func in symbolic:
                found = [w for callee in func.returns_calls if (w := self._returned(callee)) is not None]
                if len(found) < len(func.returns_calls):
                    continue  # one path returns something unknown: say nothing
                result = found[0]
                for other in found[1:]:
                    result = join(result, other)
                if result.place is not Place.UNKNOWN and self.returns.get(qual) != result:
                    self.returns[qual] = result
                    changed = True
            if not changed:
                break

    def _returned(self, callee: str) -> Where | None:
        target = self.resolve(callee)
        if target is not None:
            return self.returns.get(target)
        fact = self.external.functions.get(callee)
        return fact.returns if fact is not None else None

    # ---- properties -------------------------------------------------------------------

    def property_map(self) -> dict[str, list[PropertyFact]]:
        """Syncing properties defined in the indexed files, by name."""
        if self._properties is None:
            self._properties = {}
            for qual, func in self.functions.items():
                chain = self.chains.get(qual)
                if func.is_property and chain is not None:
                    owner, _, prop = qual.rpartition(".")
                    fact = PropertyFact(owner, prop, func.path, func.row, chain, func.deprecated)
                    self._properties.setdefault(prop, []).append(fact)
        return self._properties

    def syncing_properties(self, name: str) -> list[PropertyFact]:
        """The properties called `name`, here or in the external answers, whose getter makes the host wait."""
        return self.property_map().get(name, []) + list(self.external.properties.get(name, ()))

    def is_plain_field(self, name: str) -> bool:
        """Whether some class stores an attribute `name` as data: a read of `x.name` on a value
        of unknown class may be that field rather than a property."""
        return name in self._plain_fields() or name in self.external.fields

    def _plain_fields(self) -> set[str]:
        if self._fields is None:
            self._fields = set()
            for cls in self.classes.values():
                self._fields.update(cls.fields)
        return self._fields

    # ---- a smaller copy to keep -------------------------------------------------------------

    def snapshot(self, summaries: dict[str, ModuleSummary]) -> tuple["ProjectIndex", dict[str, ModuleSummary]]:
        """This solved index and the summaries, without what only solving needed (calls, reads)
        and with each file's needs cut to the names that carry a fact: what `answers_for` reads.
        Used to start the next run over the same files (synclint.cache.entries.ProjectSnapshot), or over
        some of them (synclint.cache.entries.PackageState)."""
        kept = copy.copy(self)
        kept._properties, kept._fields = self.property_map(), self._plain_fields()
        # A function keeps what `fact` reads; one with nothing to tell (no chain, no returns) is
        # kept as a name only, which `resolve` still needs (a method overriding one that syncs).
        # Classes keep their bases and `self` tensors (their plain fields are in `_fields`).
        nothing = FunctionSummary("", "", 0)
        kept.functions = {q: FunctionSummary("", f.path, f.row, f.is_property, f.deprecated)
                          if q in self.chains or q in self.returns else nothing for q, f in self.functions.items()}
        kept.classes = {q: replace(c, fields=frozenset()) for q, c in self.classes.items()}
        kept._resolved, kept._attrs = {}, {}
        # The attribute names a file's answers may hold: syncing properties, and tensors classes keep in `self`.
        attributes = self.property_map().keys() | {name for cls in self.classes.values() for name in cls.attrs}
        meaningful = {name for name in {c for m in summaries.values() for c in m.needs.calls}
                      if (fact := self.fact(name)) is not None and (fact.chain is not None or fact.returns is not None)}
        small = {}
        for path, summary in summaries.items():
            wanted = summary.needs
            needs = replace(wanted, calls=wanted.calls & meaningful, attributes=wanted.attributes & attributes,
                            chain_calls=wanted.chain_calls & meaningful, value_calls=wanted.value_calls & meaningful)
            # answers_for reads a summary's function names, and the keyword-only parameters.
            functions = {q: replace(nothing, params=f.params[f.positional:]) if len(f.params) > f.positional else nothing
                         for q, f in summary.functions.items()}
            small[path] = replace(summary, functions=functions, needs=needs)
        return kept, small

    def _solve_device_params(self) -> dict[str, dict[str, Where]]:
        """For each function, the parameters some caller fills with a GPU tensor (the surest
        one): those it passes as such, and those it passes from what the index solves
        (`FunctionSummary.passes`: its own parameter, a helper's result), to a fixed point."""
        found: dict[str, dict[str, Where]] = {}
        symbolic: list[tuple[str, str, str, tuple[str, ...]]] = []  # caller, callee, parameter, what it passes
        for caller in self.functions.values():
            for callee, args in caller.device_args.items():
                for target, name, given in self._weak_params_given(callee, args):
                    _keep_surer(found, target, name, given)
            for callee, terms in caller.passes.items():
                for target, name, depends in self._weak_params_given(callee, terms):
                    symbolic.append((caller.qualname, target, name, depends))
        # Each sweep can only make a parameter surer, and there are three confidences: a
        # sweep that changes nothing ends it, long before the bound.
        for _ in range(3 * len(symbolic) + 2):
            changed = False
            for caller_name, target, name, depends in symbolic:
                answer = self._answer(caller_name, depends, found)
                if answer is not None:
                    passed = Where(Place.DEVICE, answer.certainty,
                                   f"{short_name(caller_name)}() passes it here ({answer.because})")
                    changed |= _keep_surer(found, target, name, passed)
            if not changed:
                # What a file is told: only the parameters whose facts can change its findings
                # (`weak_params`, as its summary says; the `relayed` ones matter to the solve alone).
                return {q: weak for q, params in found.items()
                        if (weak := {n: w for n, w in params.items() if n in self.functions[q].weak_params})}
        raise RuntimeError("synclint: internal error: what callers pass their callees did not settle")

    def _weak_params_given(self, callee: str, args: dict[int | str, _T]) -> Iterator[tuple[str, str, _T]]:
        """Of the arguments a call of `callee` passes (by position or keyword), those that fill a
        parameter its own evidence leaves weak: (the function, the parameter, the argument)."""
        target = self.resolve(callee)
        if target is None:
            return
        func = self.functions[target]
        for key, value in args.items():
            if isinstance(key, int):
                name = func.params[key] if key < func.positional else None
            else:
                name = key if key in func.params else None
            if name is not None and (name in func.weak_params or name in func.relayed):
                yield target, name, value

    # ---- what one file needs ---------------------------------------------------------------

    def answers_for(self, summary: ModuleSummary) -> Answers:
        """The non-trivial facts about the names `summary`'s file uses from other files."""
        needs = summary.needs
        properties: dict[str, tuple[PropertyFact, ...]] = {}
        fields = set()
        for name in sorted(needs.attributes & self.property_map().keys()):
            found = tuple(p for p in self.syncing_properties(name) if not p.path == summary.path)
            if found:
                properties[name] = found
                if self.is_plain_field(name):
                    fields.add(name)
        # A read of a syncing property counts as its function's sync only where no chain says
        # more (summaries.add_late_syncs): then every callee's chain matters.
        chain_calls = needs.calls if properties else needs.chain_calls
        own = summary.functions.keys() | summary.classes.keys()
        functions: dict[str, FunctionFact] = {}
        for name in sorted(needs.calls):
            if name in own:
                continue
            fact = self.fact(name)
            if fact is None or fact.qualname in summary.functions or fact.path == summary.path:
                continue  # its own function (as an index of an earlier run may still hold it)
            chain = fact.chain if name in chain_calls else None
            returns = fact.returns if fact.returns is not None and fact.returns.is_tensor and name in needs.value_calls else None
            if chain is not None or returns is not None:
                functions[name] = FunctionFact(fact.qualname, fact.path, fact.row, chain, returns,
                                               fact.is_property, fact.deprecated)
        class_attrs: dict[str, dict[str, Where]] = {}
        class_bases: dict[str, tuple[str, ...]] = {}
        for base in sorted(needs.classes):
            if base in summary.classes:
                continue
            # Only the attributes the file names: no other can change what it finds.
            attrs = {k: v for k, v in self.class_attrs(base).items() if (v.is_tensor or v.spec) and k in needs.attributes}
            if attrs:
                class_attrs[base] = attrs
            for name in self.ancestors(base):
                cls = self.classes.get(name)
                if cls is not None and name not in summary.classes:
                    class_bases[name] = cls.bases
        device_params = {q: self.device_params[q] for q in sorted(summary.functions) if q in self.device_params}
        host_params: dict[str, dict[str, str]] = {}
        for q, func in sorted(summary.functions.items()):
            name = q.rpartition(".")[2]
            for param in func.params[func.positional:]:  # keyword-only
                example = self.host_keywords.get((name, param))
                if example is not None:
                    host_params.setdefault(q, {})[param] = f"every call naming it passes a host tensor, like {example}"
        if not (functions or class_attrs or properties or device_params or host_params):
            return NO_ANSWERS
        return Answers(functions, class_attrs, class_bases, properties, frozenset(fields), device_params, host_params)


def _keep_surer(found: dict[str, dict[str, Where]], function: str, name: str, where: Where) -> bool:
    """Keep `where` as what a caller passes `function`'s parameter `name`, if it is surer than
    what is known; whether it was."""
    known = found.setdefault(function, {}).get(name)
    if known is not None and where.certainty <= known.certainty:
        return False
    found[function][name] = where
    return True
