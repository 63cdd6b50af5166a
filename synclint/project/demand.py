"""Which files of a package a run over a few of them must index: the files whose facts they use.

A run over some files of a package with no package state in the cache (the first pre-commit run
after installing the hook) needs the facts those files use from the rest of the package, not
every file's. `Demand` starts from the checked files and, as each file's summary comes back,
asks for the files that define what the summaries name, as deep as needed:

* the functions a needed function calls, the attributes it reads, the calls whose results it
  returns (in the module that defines each qualified name: the longest dotted prefix that is a
  module of the package), and, for a method found through a class, the class and its bases;
* every method of a needed class (what a class keeps in `self` is taken from its methods);
* the properties named by an attribute read in a file with needed functions: the index matches
  syncing properties by name, so every file whose text defines a property of that name (a
  cheap look at the text, `@...property` then `def name`);
* for the functions of the checked files: their callers where a caller's GPU tensor would make
  a parameter surer (`FunctionSummary.weak_params`; every file whose text calls that name, and
  there the functions that call it, followed, and the callers of those that pass on a parameter
  of theirs, `FunctionSummary.relayed`), and the calls passing a keyword-only parameter
  something other than a literal (Answers.host_params; every file whose text has such a
  call, analysed, its needs not followed);
* at the end, for each syncing property, every file whose text assigns an attribute of that
  name (`ProjectIndex.is_plain_field`).

Every file of the package is read (the looks at the text are cheap); only the files asked for
are parsed and analysed. What the checked files ask for by qualified name or by a name in the
text is followed as deep as it goes, so their facts are those a run over the whole package
gives them, with one cut, second-order: what the callers of a *dependency* tell it (a GPU
tensor passed to one of its parameters, a host tensor passed by keyword) is not looked for.
In vLLM such callers are most of the package (`load_weights`, `weight_loader`: every model),
so following them would index most of it. Where such a fact makes a dependency's sync surer,
a run over the package may name the chain to it with a higher confidence than a run over the
checked file alone. (Also second-order: a file analysed for a keyword argument sees only the
facts of the files analysed.)
"""

from __future__ import annotations

import re
from collections.abc import Callable

from synclint.project.facts import ModuleSummary

_PROPERTY_DEF = re.compile(
    rb"^[ \t]*@[^\n]*(?:property|setter)\b[^\n]*\n(?:[ \t]*[@#][^\n]*\n)*[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.M)


class Demand:
    """The modules (by index into the package's files) a run must analyse, asked for as summaries come in."""

    def __init__(self, modules: dict[str, int], text: Callable[[int], bytes]) -> None:
        self.modules = modules  # dotted module name -> file
        self.text = text
        self.checked: set[int] = set()
        self.asked: set[int] = set()  # files asked for (analysed or to be)
        self.summaries: dict[int, ModuleSummary | None] = {}
        self.needed: set[str] = set()  # qualified names whose facts matter
        self.done: set[tuple[int, str]] = set()  # (file, item) followed in its summary
        self.waiting: dict[int, set[str]] = {}  # file -> what it must give once its summary comes
        self._followed_attributes: set[int] = set()
        self._definers: dict[str, list[int]] | None = None
        self._called: set[str] = set()  # names whose callers were looked for
        self._assigned: set[str] = set()
        self._pending: list[int] = []
        self._work: list[tuple[int, str]] = []  # (file, what to follow in its summary)

    # ---- asking ---------------------------------------------------------------------------

    def check(self, files: list[int]) -> None:
        """The checked files: every function of theirs is needed."""
        for i in files:
            self.checked.add(i)
            self._want(i, "*")

    def take(self) -> list[int]:
        """The files asked for since the last call, to analyse (first look)."""
        pending, self._pending = sorted(set(self._pending)), []
        return pending

    def learn(self, i: int, summary: ModuleSummary | None) -> None:
        """The summary of file `i` (None: none came, a file that does not parse)."""
        self.summaries[i] = summary
        self._work.extend((i, item) for item in sorted(self.waiting.pop(i, ())))
        while self._work:
            j, item = self._work.pop()
            self._follow(j, item)

    def _want(self, i: int, item: str) -> None:
        """Follow `item` (a qualified name; "*": every function; "property:NAME": the properties of
        that name; "caller:NAME": the functions calling NAME) in file `i` once its summary is known."""
        self._analyse(i)
        if i in self.summaries:
            self._work.append((i, item))
        else:
            self.waiting.setdefault(i, set()).add(item)

    def _module_of(self, qualname: str) -> int | None:
        name = qualname
        while name:
            found = self.modules.get(name)
            if found is not None:
                return found
            name = name.rpartition(".")[0]
        return None

    def _need(self, qualname: str) -> None:
        if qualname in self.needed:
            return
        self.needed.add(qualname)
        i = self._module_of(qualname)
        if i is not None:
            self._want(i, qualname)

    # ---- following ------------------------------------------------------------------------

    def _queue(self, i: int, qual: str) -> None:
        """`qual`, defined in file `i` (whose summary is known), is needed: follow it."""
        self.needed.add(qual)
        self._work.append((i, qual))

    def _follow(self, i: int, item: str) -> None:
        """What the facts of `item` in file `i` depend on."""
        summary = self.summaries.get(i)
        if summary is None or (i, item) in self.done:
            return
        self.done.add((i, item))
        kind, _, name = item.partition(":") if item.startswith(("property:", "caller:")) else ("", "", item)
        if item == "*":
            for qual in sorted(summary.functions):
                self._queue(i, qual)
            for qual in sorted(summary.classes):
                self._queue(i, qual)
            for qual in sorted(summary.needs.classes):
                self._need(qual)
        elif kind == "property":
            for qual, func in sorted(summary.functions.items()):
                if func.is_property and qual.rpartition(".")[2] == name:
                    self._queue(i, qual)
        elif kind == "caller":
            for qual, func in sorted(summary.functions.items()):
                if any(c.rpartition(".")[2] == name for c in (*func.calls, *func.reads)):
                    self._queue(i, qual)
                    if func.relayed:  # it passes on what its own callers give it: they count too
                        self._callers(qual.rpartition(".")[2], ())
        elif name in summary.functions:
            func = summary.functions[name]
            for callee in (*func.calls, *func.reads, *func.returns_calls, *func.device_args):
                self._need(callee)
            if i in self.checked:  # (what callers tell a dependency is not looked for: see above)
                short = name.rpartition(".")[2]
                if func.weak_params:
                    self._callers(short, ())
                keywords = func.params[func.positional:]
                if keywords:
                    self._callers(short, keywords)
            self._attributes(i, summary)
        elif (cls := summary.classes.get(name)) is not None:
            for base in cls.bases:
                self._need(base)
            prefix = name + "."
            for qual in sorted(summary.functions):
                if qual.startswith(prefix) and "." not in qual[len(prefix):]:
                    self._queue(i, qual)
        else:
            owner, _, attr = name.rpartition(".")
            cls = summary.classes.get(owner)
            if cls is not None:  # a method found through the bases of its class
                self._need(owner)
                for base in cls.bases:
                    self._need(f"{base}.{attr}")

    def _attributes(self, i: int, summary: ModuleSummary) -> None:
        """A file with needed functions: the properties its attribute reads may mean, by name."""
        if i in self._followed_attributes:
            return
        self._followed_attributes.add(i)
        definers = self._property_definers()
        for name in sorted(summary.needs.attributes & definers.keys()):
            for j in definers[name]:
                if j != i:
                    self._want(j, f"property:{name}")

    def _property_definers(self) -> dict[str, list[int]]:
        if self._definers is None:
            self._definers = {}
            for i in sorted(self.modules.values()):
                data = self.text(i)
                if b"property" in data or b"setter" in data:
                    for match in _PROPERTY_DEF.finditer(data):
                        found = self._definers.setdefault(match.group(1).decode(), [])
                        if not found or found[-1] != i:
                            found.append(i)
        return self._definers

    def _callers(self, name: str, keywords: tuple[str, ...]) -> None:
        """Every file whose text calls `name`; with `keywords`, every file whose text calls it
        naming one of them with something other than a literal (a keyword's argument is asked
        where it lives: that file is analysed, its needs not followed)."""
        key = name if not keywords else f"{name}:{','.join(keywords)}"
        if key in self._called:
            return
        self._called.add(key)
        if keywords:
            words = b"|".join(re.escape(k.encode()) for k in keywords)
            call = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*?\b(?:"
                              + words + rb")\s*=(?!=)\s*(?![frbuFRBU]{0,2}[\"']|\d|None\b|True\b|False\b)")
        else:
            call = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\(")
        for i in sorted(self.modules.values()):
            if call.search(self.text(i)):
                if keywords:
                    self._analyse(i)
                else:
                    self._want(i, f"caller:{name}")

    def assigning(self, names: set[str]) -> None:
        """Every file whose text assigns an attribute called one of `names` (a plain field of that
        name makes a read of it on a value of unknown class uncertain)."""
        names = names - self._assigned
        if not names:
            return
        self._assigned |= names
        words = b"|".join(re.escape(n.encode()) for n in sorted(names))
        pattern = re.compile(rb"(?:\.|^[ \t]+)(?:" + words + rb")\s*(?::[^=\n]*)?(?:=(?!=)|$)", re.M)
        for i in sorted(self.modules.values()):
            if pattern.search(self.text(i)):
                self._analyse(i)

    def _analyse(self, i: int) -> None:
        """Analyse file `i` (for what its own text says), without following its needs."""
        if i not in self.asked:
            self.asked.add(i)
            self._pending.append(i)
