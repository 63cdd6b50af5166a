"""synclint: find and fix hidden GPU<->CPU synchronizations in PyTorch code."""

__version__ = "0.1.0"


def _checkout_rules() -> None:
    """Make the checkout's top-level rules/ folder importable as `synclint.rules`.

    An installed wheel carries the rules inside the package (pyproject maps rules/ to
    synclint/rules); a checkout used in place (`python -m synclint`, `python -m pytest`)
    does not, so the same module names are pointed at the folder beside the package.
    """
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(os.path.dirname(here), "rules")
    if "synclint.rules" in sys.modules or os.path.isdir(os.path.join(here, "rules")):
        return
    init = os.path.join(folder, "__init__.py")
    if not os.path.isfile(init):
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location("synclint.rules", init, submodule_search_locations=[folder])
    assert spec is not None and spec.loader is not None  # (a .py file always has a spec with a loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["synclint.rules"] = module
    globals()["rules"] = module
    spec.loader.exec_module(module)


_checkout_rules()
