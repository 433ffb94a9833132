"""What a run ran with: the versions of torch, transformers and peft, and the project's commit.

Jobs record it when they start (`Job.provenance`) and checkpoints in their metadata.json, so a
result can be traced to the code and the libraries that made it, and installed again from the
lock files at that commit (docs/dependencies.md).

The commit comes from `ECHOSTUDIO_COMMIT` when it is set (a deploy built without `.git`), else
from `.git` read as files (no `git` binary needed on a worker), else it is "unknown".
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

PACKAGES = ("torch", "transformers", "peft")
COMMIT_ENV = "ECHOSTUDIO_COMMIT"
UNKNOWN = "unknown"
NOT_INSTALLED = "not installed"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Return {package: installed version} ("not installed" for one that is missing)."""
    versions: dict[str, str] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = NOT_INSTALLED
    return versions


def _git_dir(repo_root: Path) -> Path | None:
    dot_git = repo_root / ".git"
    if dot_git.is_dir():
        return dot_git
    # A worktree or submodule: `.git` is a file saying "gitdir: <path>".
    if dot_git.is_file():
        line = dot_git.read_text().strip()
        if line.startswith("gitdir:"):
            target = Path(line.removeprefix("gitdir:").strip())
            return target if target.is_absolute() else (repo_root / target).resolve()
    return None


def _resolve_ref(git_dir: Path, ref: str) -> str | None:
    # A worktree keeps its own HEAD but shares branches with the main repository (`commondir`).
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    for folder in (git_dir, common):
        loose = folder / ref
        if loose.is_file():
            return loose.read_text().strip()
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    return None


def git_commit(repo_root: Path) -> str | None:
    """Return the commit checked out at `repo_root`, read from `.git`; None when it cannot be read."""
    try:
        git_dir = _git_dir(repo_root)
        if git_dir is None:
            return None
        head = (git_dir / "HEAD").read_text().strip()
        sha = _resolve_ref(git_dir, head.removeprefix("ref:").strip()) if head.startswith("ref:") else head
    except OSError:
        return None
    return sha if sha and _SHA.fullmatch(sha) else None


def project_commit(environ: Mapping[str, str], repo_root: Path) -> str:
    """Return the project's commit: `ECHOSTUDIO_COMMIT`, else the checkout's, else "unknown"."""
    return environ.get(COMMIT_ENV, "").strip() or git_commit(repo_root) or UNKNOWN


def collect_provenance(environ: Mapping[str, str], repo_root: Path) -> dict[str, str]:
    """Return {"commit": ..., "torch": ..., "transformers": ..., "peft": ...}."""
    return {"commit": project_commit(environ, repo_root), **package_versions()}


@functools.cache
def _process_provenance() -> tuple[tuple[str, str], ...]:
    return tuple(collect_provenance(os.environ, PROJECT_ROOT).items())


def current_provenance() -> dict[str, str]:
    """Return what this process runs with.

    Read once per process: a worker runs the code and libraries it imported, even when the
    checkout or the virtual environment is changed under it later by a deploy.
    """
    return dict(_process_provenance())


def describe(provenance: Mapping[str, str]) -> str:
    """Return provenance as one line: "commit 1a2b…, torch 2.13.0+cpu, transformers 5.24.0, peft 0.21.2"."""
    # In a fixed order: metadata.json stores its keys sorted, the job row in the order collected.
    order = {name: index for index, name in enumerate(("commit", *PACKAGES))}
    ordered = sorted(provenance.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))
    return ", ".join(f"{name} {value}" for name, value in ordered)
