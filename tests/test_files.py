"""Which files a run checks: git's ignore files as git reads them, and one meaning of globs (git's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from synclint.config import SettingsResolver
from synclint.files import Target, discover


def found(root: Path, *paths: str) -> list[str]:
    """The files a run from `root` over `paths` (default: the root) would check, relative to it."""
    resolver = SettingsResolver(None, {}, root)
    targets = discover([root / p for p in paths] or [root], resolver)
    return sorted(t.path.relative_to(root).as_posix() for t in targets if isinstance(t, Target))


@pytest.fixture
def repo(tmp_path, write, monkeypatch):
    """A git repository (as a folder holding `.git`) with a user home that has no git config."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / ".git" / "info").mkdir(parents=True)
    for name in ("a.py", "sub/b.py", "sub/deep/c.py", "logs/d.py", "keep/e.py", "keep/f.py"):
        write(name, "x = 1\n")
    return tmp_path


def test_gitignore_negation_and_folder_patterns(repo, write):
    write(".gitignore", "sub/\nkeep/*.py\n!keep/e.py\n")
    assert found(repo) == ["a.py", "keep/e.py", "logs/d.py"]


def test_a_deeper_gitignore_overrides_a_higher_one(repo, write):
    write(".gitignore", "*.py\n")
    write("sub/.gitignore", "!b.py\n")
    assert found(repo) == ["sub/b.py"]


def test_git_info_exclude_is_read(repo, write):
    write(".git/info/exclude", "logs/\n")
    assert found(repo) == ["a.py", "keep/e.py", "keep/f.py", "sub/b.py", "sub/deep/c.py"]


def test_a_gitignore_reincludes_what_info_exclude_ignores(repo, write):
    # .git/info/exclude has lower precedence than the repository's .gitignore files.
    write(".git/info/exclude", "*.py\n")
    write(".gitignore", "!a.py\n")
    assert found(repo) == ["a.py"]


def test_core_excludes_file_from_the_repository_config(repo, write):
    write("global-ignore", "keep/\n")
    write(".git/config", '[core]\n\tbare = false\n[core]\n\texcludesFile = "global-ignore"\n')
    assert found(repo) == ["a.py", "logs/d.py", "sub/b.py", "sub/deep/c.py"]


def test_core_excludes_file_defaults_to_the_user_config_folder(repo, write):
    write("home/.config/git/ignore", "sub/deep/\n")
    assert found(repo) == ["a.py", "keep/e.py", "keep/f.py", "logs/d.py", "sub/b.py"]


def test_a_worktree_reads_the_main_repository_info_exclude(tmp_path, write, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write("main/.git/info/exclude", "skip.py\n")
    write("main/.git/worktrees/wt/commondir", "../..\n")
    write("wt/.git", f"gitdir: {tmp_path}/main/.git/worktrees/wt\n")
    write("wt/skip.py", "x = 1\n")
    write("wt/take.py", "x = 1\n")
    assert found(tmp_path / "wt") == ["take.py"]


def test_without_a_repository_gitignore_files_are_not_read(tmp_path, write):
    write(".gitignore", "a.py\n")
    write("a.py", "x = 1\n")
    assert found(tmp_path) == ["a.py"]


def test_exclude_globs_read_star_as_git_does(repo, write):
    # `*` stays within one folder, `**` crosses folders, a name without `/` matches at any depth.
    write("pyproject.toml", '[tool.synclint]\nextend-exclude = ["sub/*.py"]\n')
    assert found(repo) == ["a.py", "keep/e.py", "keep/f.py", "logs/d.py", "sub/deep/c.py"]
    write("pyproject.toml", '[tool.synclint]\nextend-exclude = ["sub/**/*.py"]\n')
    assert found(repo) == ["a.py", "keep/e.py", "keep/f.py", "logs/d.py"]
    write("pyproject.toml", '[tool.synclint]\nextend-exclude = ["deep", "e.py"]\n')
    assert found(repo) == ["a.py", "keep/f.py", "logs/d.py", "sub/b.py"]


def test_per_file_ignores_read_star_as_git_does(tmp_path):
    from synclint.config import build_settings

    settings = build_settings({"per-file-ignores": {"tests/*": ["SYNC101"], "**/legacy.py": ["SYNC107"]}},
                              tmp_path, None)
    assert settings.ignored_in_file("tests/test_a.py") == {"SYNC101"}
    assert settings.ignored_in_file("tests/unit/test_a.py") == {"SYNC101"}  # under a matched folder
    assert settings.ignored_in_file("src/tests.py") == set()
    assert settings.ignored_in_file("a/b/legacy.py") == {"SYNC107"}
