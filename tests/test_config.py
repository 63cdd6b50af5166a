"""Configuration errors name the key and the file; nothing is silently ignored."""

from __future__ import annotations

import pytest

from conftest import run_cli

KERNEL = "import torch\nx = torch.ones(2, device='cuda')\nif x.any():\n    pass\n"


@pytest.mark.parametrize(
    "table, message",
    [
        ('selct = ["SYNC101"]', "unknown key `selct` in [tool.synclint] (did you mean `select`?)"),
        ('select = "SYNC101"', "`select` must be a list, not a string"),
        ("select = [101]", "every item of `select` must be a string"),
        ('min-confidence = "sure"', "unknown confidence 'sure'"),
        ('output-format = "xml"', "`output-format` must be one of"),
        ("unsafe-fixes = 1", "`unsafe-fixes` must be true or false"),
        ('per-file-ignores = { "tests/*" = "SYNC101" }', "`per-file-ignores.tests/*` must be a list"),
        ('ignore = ["SYNC9"]', "`ignore` names 'SYNC9', which matches no rule"),
    ],
)
def test_bad_config_is_exit_2_naming_key_and_file(write, tmp_path, table, message):
    write("pyproject.toml", f"[tool.synclint]\n{table}\n")
    write("kernel.py", KERNEL)
    proc = run_cli("check", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert str(tmp_path / "pyproject.toml") in proc.stderr
    assert message in proc.stderr


def test_invalid_toml_is_exit_2(write, tmp_path):
    write("pyproject.toml", "[tool.synclint\nselect = [")
    write("kernel.py", KERNEL)
    proc = run_cli("check", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "not valid TOML" in proc.stderr and "Traceback" not in proc.stderr


def test_nearest_pyproject_is_found_upward(write, tmp_path):
    write("pyproject.toml", '[tool.synclint]\nignore = ["SYNC101"]\n')
    write("src/pkg/kernel.py", KERNEL)
    assert run_cli("check", "kernel.py", cwd=tmp_path / "src" / "pkg").returncode == 0
    assert run_cli("check", "src", cwd=tmp_path).returncode == 0


def test_per_file_ignores(write, tmp_path):
    write("pyproject.toml", '[tool.synclint]\nper-file-ignores = { "legacy/*" = ["SYNC101"] }\n')
    write("legacy/kernel.py", KERNEL)
    write("new/kernel.py", KERNEL)
    proc = run_cli("check", ".", "--output-format", "concise", cwd=tmp_path)
    assert proc.returncode == 1
    assert "new/kernel.py:3:4: SYNC101" in proc.stdout
    assert "legacy/" not in proc.stdout


def test_explicit_config_file(write, tmp_path):
    write("custom.toml", '[tool.synclint]\nignore = ["SYNC101"]\n')
    write("kernel.py", KERNEL)
    assert run_cli("check", "kernel.py", "--config", "custom.toml", cwd=tmp_path).returncode == 0
    proc = run_cli("check", "kernel.py", "--config", "nope.toml", cwd=tmp_path)
    assert proc.returncode == 2 and "no such configuration file" in proc.stderr


def test_extend_rules_folder_adds_a_users_rule(write, tmp_path):
    write(
        "my_rules/no_empty_cache.py",
        '''import libcst as cst
from synclint.rule import Invalid, Rule


class NoEmptyCache(Rule):
    code = "SYNC901"
    name = "no-empty-cache"
    summary = "torch.cuda.empty_cache() waits for the GPU"
    docs = """
    ## What it does
    Flags empty_cache.
    ## Why is this bad?
    It synchronizes.
    ## Example
    torch.cuda.empty_cache()
    ## Use instead
    Nothing.
    ## Fix safety
    No fix.
    """
    INVALID = [Invalid("import torch\\ntorch.cuda.empty_cache()\\n")]

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualname(node.func) == "torch.cuda.empty_cache":
            self.report(node, "empty_cache waits for the GPU")
''',
    )
    write("pyproject.toml", '[tool.synclint]\nextend-rules = ["my_rules"]\n')
    write("kernel.py", "import torch\ntorch.cuda.empty_cache()\n")
    proc = run_cli("check", "kernel.py", "--output-format", "concise", cwd=tmp_path)
    assert proc.returncode == 1
    assert "kernel.py:2:1: SYNC901 empty_cache waits for the GPU" in proc.stdout


def test_extend_rules_module_that_raises_is_a_clear_error(write, tmp_path):
    write("my_rules/bad.py", "raise RuntimeError('boom')\n")
    write("pyproject.toml", '[tool.synclint]\nextend-rules = ["my_rules"]\n')
    write("kernel.py", KERNEL)
    proc = run_cli("check", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "raised on import: RuntimeError: boom" in proc.stderr and "Traceback" not in proc.stderr


def test_a_rule_that_crashes_is_named_and_the_other_files_are_still_checked(write, tmp_path):
    write(
        "my_rules/crashing.py",
        '''import libcst as cst
from synclint.rule import Invalid, Rule


class Crashing(Rule):
    code = "SYNC902"
    name = "crashing"
    summary = "crashes on calls to boom()"
    docs = """
    ## What it does
    Crashes.
    ## Why is this bad?
    It is a test.
    ## Example
    boom()
    ## Use instead
    Nothing.
    ## Fix safety
    No fix.
    """
    INVALID = [Invalid("boom()\\n")]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "boom":
            raise ValueError("bad rule")
''',
    )
    write("pyproject.toml", '[tool.synclint]\nextend-rules = ["my_rules"]\n')
    write("a_crash.py", "import torch\nboom()\n")
    write("b_fine.py", KERNEL)
    proc = run_cli("check", ".", "--output-format", "concise", cwd=tmp_path)
    assert proc.returncode == 2
    assert ("a_crash.py:1:1: SYNC001 internal error while checking this file: SYNC902 (crashing) failed on a Call: "
            "ValueError: bad rule") in proc.stdout
    assert "b_fine.py:" in proc.stdout  # the next file was checked
    assert "Traceback" not in proc.stderr
    debug = run_cli("check", ".", "--debug", "--output-format", "concise", cwd=tmp_path)
    assert "Traceback (most recent call last)" in debug.stderr and "ValueError: bad rule" in debug.stderr


FLAGS_KERNEL = '''import torch
from contextlib import nullcontext as sync_meant


class Model(torch.nn.Module):
    def forward(self, x, counts_staging):
        return x * counts_staging.sum().item()


def train(model, loader):
    t = torch.ones(2, device="cuda")
    for batch in loader:
        print(t.sum().item())
        with sync_meant():
            print(t.max().item())
    return t.min().item()
'''


def _concise_rows(proc) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line.split(" ")[0] + " " + line.split(" ")[1] for line in proc.stdout.splitlines() if ": SYNC" in line]


def test_every_list_setting_has_its_flag():
    from synclint.arguments import CHECK_OPTIONS
    from synclint.config import CORE_KEYS

    flags = {flag for option in CHECK_OPTIONS for flag in option.flags}
    lists = [key for key, spec in CORE_KEYS.items() if spec.type in (list, dict)]
    assert lists and [key for key in lists if f"--{key}" not in flags] == []


@pytest.mark.parametrize("flag, table", [
    (["--ignore-contexts", "loop,code"], 'ignore-contexts = ["loop", "code"]'),
    (["--allow-sync-contexts", "sync_meant"], 'allow-sync-contexts = ["sync_meant"]'),
    (["--host-name-patterns", "*_staging"], 'host-name-patterns = ["*_staging"]'),
    (["--per-file-ignores", "kernel.py:SYNC107"], 'per-file-ignores = { "kernel.py" = ["SYNC107"] }'),
    (["--exclude", "vendored"], 'exclude = ["vendored"]'),
    (["--extend-rules", "my_rules"], 'extend-rules = ["my_rules"]'),
])
def test_a_list_setting_given_as_a_flag_does_what_the_configuration_does(write, tmp_path, flag, table):
    write("kernel.py", FLAGS_KERNEL)
    write("vendored/copy.py", FLAGS_KERNEL)
    write("my_rules/more.py", "import libcst as cst\nfrom synclint.rule import Invalid, Rule\n\n\n"
                              "class SyncMeant(Rule):\n    code = 'SYNC902'\n    name = 'sync-meant'\n"
                              "    summary = 'a sync meant'\n"
                              "    docs = '## What it does\\nx\\n## Why is this bad?\\nx\\n## Example\\nx\\n## Use instead\\n"
                              "x\\n## Fix safety\\nx\\n'\n"
                              "    INVALID = [Invalid('sync_meant()\\n')]\n\n"
                              "    def visit_Call(self, node: cst.Call) -> None:\n"
                              "        if isinstance(node.func, cst.Name) and node.func.value == 'sync_meant':\n"
                              "            self.report(node, 'sync_meant() called')\n")
    plain = _concise_rows(run_cli("check", "--output-format", "concise", ".", cwd=tmp_path))
    by_flag = _concise_rows(run_cli("check", "--output-format", "concise", *flag, ".", cwd=tmp_path))
    write("pyproject.toml", f"[tool.synclint]\n{table}\n")
    by_config = _concise_rows(run_cli("check", "--output-format", "concise", ".", cwd=tmp_path))
    assert by_flag == by_config != plain


def test_the_flags_read_as_the_user_means_them(write, tmp_path):
    write("kernel.py", FLAGS_KERNEL)
    rows = _concise_rows(run_cli("check", "--output-format", "concise", "kernel.py", cwd=tmp_path))
    assert rows == ["kernel.py:7:20: SYNC107", "kernel.py:13:15: SYNC107", "kernel.py:15:19: SYNC107",
                    "kernel.py:16:12: SYNC107"]
    proc = run_cli("check", "--ignore-contexts", "loop,code", "kernel.py", cwd=tmp_path)
    assert _concise_rows(proc) == ["kernel.py:7:20: SYNC107"]
    assert proc.stdout.splitlines()[-1] == "Found 1 finding: 1 per step. (3 findings left out by `ignore-contexts`.)"
    write("pyproject.toml", '[tool.synclint]\nignore-contexts = ["step"]\n')
    proc = run_cli("check", "--ignore-contexts", "", "--output-format", "concise", "kernel.py", cwd=tmp_path)
    assert len(_concise_rows(proc)) == 4  # `""`: no context dropped, whatever the configuration says
    assert _concise_rows(run_cli("check", "--output-format", "concise", "--allow-sync-contexts", "sync_meant",
                                 "--host-name-patterns", "*_staging", "kernel.py", cwd=tmp_path)) == [
        "kernel.py:13:15: SYNC107", "kernel.py:16:12: SYNC107"]
    for args, message in [
        (["--ignore-contexts", "loops"], "argument --ignore-contexts: knows loop, step, interval, init, test, code, host, never, "
                                         "not 'loops'"),
        (["--per-file-ignores", "kernel.py"], "argument --per-file-ignores: expected GLOB:CODES"),
        (["--per-file-ignores", "kernel.py:SYNC999"], "`per-file-ignores` names 'SYNC999', which matches no rule"),
        (["--extend-rules", "nowhere"], "nowhere"),
    ]:
        proc = run_cli("check", *args, "kernel.py", cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
