"""Provenance: the project commit read from `.git` as files or from ECHOSTUDIO_COMMIT, and library versions."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

from webapp.lib.provenance import (
    NOT_INSTALLED,
    PROJECT_ROOT,
    UNKNOWN,
    collect_provenance,
    describe,
    git_commit,
    package_versions,
    project_commit,
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _repo_with_a_commit(path: Path) -> str:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "file.txt").write_text("one")
    _git(path, "add", "file.txt")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "one")
    return _git(path, "rev-parse", "HEAD")


def test_the_commit_of_a_branch_is_read_from_its_loose_ref(tmp_path: Path) -> None:
    head = _repo_with_a_commit(tmp_path / "repo")

    assert git_commit(tmp_path / "repo") == head


def test_the_commit_of_a_packed_branch_is_read_from_packed_refs(tmp_path: Path) -> None:
    head = _repo_with_a_commit(tmp_path / "repo")
    _git(tmp_path / "repo", "pack-refs", "--all")

    assert not (tmp_path / "repo/.git/refs/heads/main").exists()
    assert git_commit(tmp_path / "repo") == head


def test_a_detached_head_is_its_own_commit(tmp_path: Path) -> None:
    head = _repo_with_a_commit(tmp_path / "repo")
    _git(tmp_path / "repo", "checkout", "-q", "--detach")

    assert git_commit(tmp_path / "repo") == head


def test_a_worktree_reads_its_branch_through_the_main_repository(tmp_path: Path) -> None:
    _repo_with_a_commit(tmp_path / "repo")
    _git(tmp_path / "repo", "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    (tmp_path / "side/other.txt").write_text("two")
    _git(tmp_path / "side", "add", "other.txt")
    _git(
        tmp_path / "side", "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "two"
    )

    assert (tmp_path / "side/.git").is_file()
    assert git_commit(tmp_path / "side") == _git(tmp_path / "side", "rev-parse", "HEAD")


def test_a_deploy_names_its_commit_in_the_environment_over_any_checkout(tmp_path: Path) -> None:
    _repo_with_a_commit(tmp_path / "repo")

    assert project_commit({"ECHOSTUDIO_COMMIT": " v1.4-abc123 "}, tmp_path / "repo") == "v1.4-abc123"


def test_no_checkout_and_no_environment_is_unknown(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None
    assert project_commit({}, tmp_path) == UNKNOWN
    assert project_commit({"ECHOSTUDIO_COMMIT": ""}, tmp_path) == UNKNOWN


def test_versions_are_the_installed_ones_and_a_missing_package_says_so() -> None:
    assert package_versions(["torch", "no-such-package-echostudio"]) == {
        "torch": metadata.version("torch"),
        "no-such-package-echostudio": NOT_INSTALLED,
    }


def test_provenance_names_the_commit_then_torch_transformers_and_peft() -> None:
    provenance = collect_provenance({"ECHOSTUDIO_COMMIT": "abc123"}, PROJECT_ROOT)

    assert list(provenance) == ["commit", "torch", "transformers", "peft"]
    assert describe(provenance) == (
        f"commit abc123, torch {metadata.version('torch')}, transformers {metadata.version('transformers')}, "
        f"peft {metadata.version('peft')}"
    )
