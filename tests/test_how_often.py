"""Where and how often code runs, solved over a call graph that follows methods (synclint.project.how_often):
each finding's context and `because` on a small package written for these tests, whose syncs sit in
a module's forward and its helpers, a decode loop's objects (an attribute's class, a list of
filters), a dataset, set-up code, a reference only tests call, and a helper nothing calls."""

from __future__ import annotations

import textwrap

from conftest import run_json

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/layers.py": '''
        import torch
        from torch import nn

        from pkg.registry import BACKENDS


        class Block(nn.Module):
            def forward(self, x):
                return self._norm(x)

            def _norm(self, x):
                return _mask(x)


        def _mask(x):
            if x.isnan().any():
                x = torch.nan_to_num(x)
            return x


        def _reference(x):
            if x.isinf().any():
                return None
            return x


        def _dead(x):
            if x.isinf().any():
                return None
            return x


        @BACKENDS.register("fast")
        def _registered(x):
            if x.isinf().any():
                return None
            return x


        def _named_elsewhere(x):
            if x.isinf().any():
                return None
            return x
    ''',
    "pkg/registry.py": '''
        class Registry:
            def register(self, name):
                return lambda f: f


        BACKENDS = Registry()
    ''',
    "pkg/plain.py": '''
        from pkg.layers import _named_elsewhere


        def run(values):
            return _named_elsewhere(values)
    ''',
    "pkg/decode.py": '''
        import torch


        class Decoder:
            def __init__(self, eot):
                self.eot = eot

            def update(self, tokens, logits):
                nxt = logits.argmax(-1)
                if (nxt == self.eot).all():
                    return tokens, True
                return torch.cat([tokens, nxt[:, None]], dim=-1), False


        class SuppressTokens:
            def __init__(self, ids):
                self.ids = ids

            def suppress(self, logits, tokens):
                if logits.max() > 100:
                    logits.clamp_(max=100)


        class Generator:
            def __init__(self, model):
                self.model = model.cuda()
                self.decoder = Decoder(0)
                self.filters = [SuppressTokens([1, 2])]

            def run(self, tokens):
                for _ in range(10):
                    logits = self.model(tokens)
                    for f in self.filters:
                        f.suppress(logits, tokens)
                    tokens, done = self.decoder.update(tokens, logits)
                    if done:
                        break
                return tokens
    ''',
    "pkg/data.py": '''
        import torch
        from torch.utils.data import Dataset


        class Tokens(Dataset):
            def __init__(self, rows):
                self.rows = rows

            def __getitem__(self, i):
                return _encode(self.rows[i])


        def _encode(row):
            if row.isnan().any():
                return torch.zeros_like(row)
            return row
    ''',
    "pkg/cli.py": '''
        import torch


        def main(model):
            model = model.cuda()
            for name, p in model.named_parameters():
                if p.isnan().any():
                    print(name)
            report(model)


        def report(model):
            for p in model.parameters():
                print(p.norm().item())
    ''',
    "pkg/test_layers.py": '''
        import torch

        from pkg.layers import _reference


        def test_reference():
            assert _reference(torch.ones(3)) is not None
    ''',
}


def solved(tmp_path) -> dict[tuple[str, int], tuple[str, str]]:
    for name, text in PACKAGE.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    _, found = run_json("check", "--no-cache", "--min-confidence", "low", "--include-tests", "pkg", cwd=tmp_path)
    return {(f["filename"].replace("\\", "/"), f["location"]["row"]): (f["context"], f["because"] or "") for f in found}


def test_a_helper_a_modules_forward_reaches_through_a_method_runs_every_step(tmp_path):
    context, because = solved(tmp_path)[("pkg/layers.py", 16)]
    assert context == "step"
    assert because.endswith("every step: Block.forward() -> Block._norm() -> _mask()")


def test_methods_of_objects_kept_in_attributes_and_lists_run_every_decode_step(tmp_path):
    found = solved(tmp_path)
    assert found[("pkg/decode.py", 10)][0] == "step"  # Decoder.update, through `self.decoder`
    assert found[("pkg/decode.py", 10)][1].endswith(
        "every step, in a loop that runs a model: Generator.run() -> Decoder.update()")
    assert found[("pkg/decode.py", 20)][0] == "step"  # SuppressTokens.suppress, through `for f in self.filters`
    assert found[("pkg/decode.py", 20)][1].endswith(
        "every step, in a loop that runs a model: Generator.run() -> SuppressTokens.suppress()")


def test_a_dataset_helper_runs_on_the_host(tmp_path):
    context, because = solved(tmp_path)[("pkg/data.py", 14)]
    assert context == "host"
    assert because.endswith("on the host, in data loading: Tokens.__getitem__() -> _encode()")


def test_a_loop_that_runs_no_model_repeats_only_as_often_as_its_function(tmp_path):
    found = solved(tmp_path)
    assert found[("pkg/cli.py", 7)] == ("init", "model.cuda(); once, in set-up code: main()")
    assert found[("pkg/cli.py", 14)][0] == "init"  # report() is called only by main()
    assert found[("pkg/cli.py", 14)][1].endswith("once, in set-up code: main() -> report()")


def test_what_only_tests_call_is_test_code_and_what_nothing_calls_never_runs(tmp_path):
    found = solved(tmp_path)
    assert found[("pkg/layers.py", 22)][0] == "test"
    assert found[("pkg/layers.py", 22)][1].endswith("only in tests: test_reference() -> _reference()")
    assert found[("pkg/layers.py", 28)][0] == "never"
    assert found[("pkg/layers.py", 28)][1].endswith("never: nothing in the project calls it: _dead()")
    # A file that never mentions torch is not parsed, so its call is not in the graph; but it names the
    # helper, which may run: as often as the project's users call it, not never.
    assert found[("pkg/layers.py", 41)][0] == "code"
    # A decorator that is no plain wrapper may hand the function to a registry, which calls it.
    assert found[("pkg/layers.py", 35)][0] == "code"
