"""The lock files pin, with hashes, everything requirements*.txt declares; torch stays the declared CPU build.

Pure file checks: nothing is resolved or downloaded. A failure here after editing requirements*.txt
means `make lock` was not run (docs/dependencies.md).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parent.parent
LOCKS = {"requirements.txt": "requirements.lock", "requirements-dev.txt": "requirements-dev.lock"}
WHEELS = Path("/opt/wheels")
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")
_HASH = re.compile(r"--hash=sha256:(?P<digest>[0-9a-f]{64})")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: tuple[str, ...]


def declared(name: str) -> dict[str, Requirement]:
    """Return {canonical name: requirement} of a requirements file, following `-r` includes."""
    found: dict[str, Requirement] = {}
    for raw in (ROOT / name).read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-r "):
            found.update(declared(line.removeprefix("-r ").strip()))
            continue
        requirement = Requirement(line)
        found[canonicalize_name(requirement.name)] = requirement
    return found


def locked(name: str) -> dict[str, Pin]:
    """Return {canonical name: pin} of a pip-compile lock file; fail on any line that is not a pin."""
    pins: dict[str, Pin] = {}
    current = ""
    hashes: dict[str, list[str]] = {}
    versions: dict[str, Version] = {}
    for line in (ROOT / name).read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if pin := _PIN.match(stripped):
            current = canonicalize_name(pin["name"])
            versions[current], hashes[current] = Version(pin["version"]), []
        elif digest := _HASH.search(stripped):
            hashes[current].append(digest["digest"])
        else:
            raise AssertionError(f"{name}: not a pin or a hash: {line!r}")
    for package, version in versions.items():
        pins[package] = Pin(version, tuple(hashes[package]))
    return pins


@pytest.mark.parametrize(("requirements", "lock"), LOCKS.items())
def test_every_declared_requirement_is_pinned_in_its_lock_within_its_range(
    requirements: str, lock: str
) -> None:
    pins = locked(lock)

    outside = {
        name: str(requirement.specifier)
        for name, requirement in declared(requirements).items()
        if name not in pins or not requirement.specifier.contains(pins[name].version, prereleases=True)
    }

    assert outside == {}, f"run `make lock`: {lock} lacks or breaks these declarations"


@pytest.mark.parametrize("lock", LOCKS.values())
def test_every_pin_of_a_lock_has_its_hashes(lock: str) -> None:
    unhashed = [name for name, pin in locked(lock).items() if not pin.hashes]

    assert unhashed == []


def test_the_dev_lock_installs_exactly_what_the_runtime_lock_does() -> None:
    runtime, dev = locked("requirements.lock"), locked("requirements-dev.lock")

    assert {name: dev.get(name) for name in runtime} == runtime


def test_torch_is_locked_as_the_declared_release_of_the_cpu_build() -> None:
    torch_declared = declared("requirements.txt")["torch"]
    (pinned_release,) = [spec.version for spec in torch_declared.specifier if spec.operator == "=="]

    for lock in LOCKS.values():
        torch = locked(lock)["torch"]
        assert (torch.version.public, torch.version.local) == (pinned_release, "cpu")
        assert len(torch.hashes) == 1, "one build of torch: the CPU wheel"


def test_the_torch_hash_is_the_local_cpu_wheel_s() -> None:
    if not any(WHEELS.glob("torch-*.whl")):
        skip_or_fail(f"no local torch wheel in {WHEELS} on this machine")
    torch = locked("requirements.lock")["torch"]
    (wheel,) = WHEELS.glob(f"torch-{torch.version}-cp311-*.whl")

    with wheel.open("rb") as handle:
        assert torch.hashes == (hashlib.file_digest(handle, "sha256").hexdigest(),)


def test_the_speech_packages_installed_without_dependencies_are_exact_hashed_pins_outside_the_locks() -> None:
    speech = locked("requirements-speech.txt")
    pinned = {*locked("requirements.lock"), *locked("requirements-dev.lock")}

    assert set(speech) == {"pocketsphinx", "silero-vad", "speechmos", "resemblyzer"}
    assert [name for name, pin in speech.items() if not pin.hashes] == []
    assert set(speech) & pinned == set()


def test_the_speech_packages_are_installed_with_their_hashes_checked() -> None:
    makefile = (ROOT / "Makefile").read_text()
    installs = [line for line in makefile.splitlines() if "requirements-speech.txt" in line and "pip" in line]

    assert installs and all("--no-deps" in line and "--require-hashes" in line for line in installs)
