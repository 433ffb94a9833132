"""Backup and restore rates and peak memory as the studio grows (issue 43).

    nice .venv/bin/python bench/backup.py [--items 10000 100000] [--audio-seconds 0.1]

For each size, a fresh SQLite studio (its own var dir under a temporary folder) gets that many items,
each with one take whose audio is a real WAV file in media storage. Then, each in a fresh process so
its peak RSS (the kernel's high-water mark, Django loaded) is its own:

- `manage.py backup` writes the snapshot (database through SQLite's online backup API, JSON Lines
  per table, every WAV with its sha256);
- `manage.py restore` rebuilds a second, freshly migrated studio from it, after checking every
  checksum (the migration is not timed).

Rates are items per second (each item: its row, its take's row and its audio file) and MB/s of
files. Flat memory means the same peak at 10K and at 100K: every table and the media listing are
streamed, never held whole. The machine is shared, so the load average is printed beside each figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def populate(items: int, audio_seconds: float) -> None:
    """Migrate, then add `items` items, each with a take and its WAV, in blocks of 5,000."""
    import django

    django.setup()
    import numpy as np
    from django.core.management import call_command

    from annotation.audio.synthesis import to_wav_bytes
    from annotation.recording.models import Item, Take
    from webapp.models import User
    from webapp.storage import new_media_key, save_media

    call_command("migrate", verbosity=0)
    actor = User.objects.create(username="bench-actor")
    t = np.arange(round(audio_seconds * 16_000)) / 16_000
    for start in range(0, items, 5_000):
        block = range(start, min(items, start + 5_000))
        made = Item.objects.bulk_create(
            Item(external_id=f"BENCH-{n:07d}", text=f"Utterance {n}: oh great, another Monday.")
            for n in block
        )
        takes = []
        for n, item in zip(block, made, strict=True):
            # Each file differs (a tone of its own), as real takes do.
            wav = to_wav_bytes((8000 * np.sin(2 * np.pi * (110 + n % 400) * t)).astype(np.int16), 16_000)
            key = save_media(new_media_key("take", "wav"), wav)
            takes.append(Take(item=item, actor=actor, audio_key=key, original_key=key))
        Take.objects.bulk_create(takes)
        print(f"    populated {block.stop:,} items", flush=True)


def timed_command(*args: str) -> None:
    """Run one management command and print its seconds and this process's peak RSS."""
    import django

    django.setup()
    from django.core.management import call_command

    if args[0] == "restore":
        call_command("migrate", verbosity=0)
    started = time.monotonic()
    call_command(*args, stdout=open(os.devnull, "w"))  # noqa: SIM115
    print(f"RESULT {time.monotonic() - started:.3f} {peak_rss_mib():.1f}", flush=True)


def run_phase(var_dir: Path, *phase: str) -> tuple[float, float]:
    env = {**os.environ, "ECHOSTUDIO_VAR_DIR": str(var_dir), "ECHOSTUDIO_SPEECH_CHECKS": "0"}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, __file__, "--phase", *phase], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"phase {phase[0]} failed:\n{done.stdout}\n{done.stderr}")
    result = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not result:
        return 0.0, 0.0
    seconds, rss = result[-1].split()[1:]
    return float(seconds), float(rss)


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def bench(items: int, audio_seconds: float, scratch: Path) -> tuple[float, float, float, float]:
    source, fresh = scratch / f"studio-{items}", scratch / f"restored-{items}"
    snapshot = scratch / f"snapshot-{items}-{uuid.uuid4().hex[:6]}"
    print(f"  {items:,} items: populating (not timed)", flush=True)
    run_phase(source, "populate", str(items), str(audio_seconds))
    backup_s, backup_rss = run_phase(source, "backup", str(snapshot))
    size_mb = folder_bytes(snapshot) / 1e6
    print(
        f"  {items:,} items: backup  {items / backup_s:8,.0f} items/s {size_mb / backup_s:7.1f} MB/s "
        f"({size_mb:,.0f} MB in {backup_s:.1f} s), peak RSS {backup_rss:.0f} MiB; {load()}",
        flush=True,
    )
    restore_s, restore_rss = run_phase(fresh, "restore", str(snapshot))
    print(
        f"  {items:,} items: restore {items / restore_s:8,.0f} items/s {size_mb / restore_s:7.1f} MB/s "
        f"({restore_s:.1f} s, every checksum verified first), peak RSS {restore_rss:.0f} MiB; {load()}",
        flush=True,
    )
    for folder in (source, fresh, snapshot):
        shutil.rmtree(folder, ignore_errors=True)
    return backup_s, backup_rss, restore_s, restore_rss


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--audio-seconds", type=float, default=0.1, help="each take's length (0.1 s: 3.2 KB)")
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        if args.phase[0] == "populate":
            populate(int(args.phase[1]), float(args.phase[2]))
        else:
            timed_command(*args.phase)
        return
    print(
        f"Backup and restore of a SQLite studio, {args.audio_seconds} s of 16 kHz audio per take", flush=True
    )
    peaks = {}
    with tempfile.TemporaryDirectory(prefix="echostudio-backup-bench-") as scratch:
        for items in sorted(args.items):
            peaks[items] = bench(items, args.audio_seconds, Path(scratch))
    smallest, largest = min(peaks), max(peaks)
    if smallest != largest:
        grow = largest / smallest
        print(
            f"Memory as the studio grows {grow:.0f}x ({smallest:,} -> {largest:,} items): backup peak RSS "
            f"{peaks[smallest][1]:.0f} -> {peaks[largest][1]:.0f} MiB, restore "
            f"{peaks[smallest][3]:.0f} -> {peaks[largest][3]:.0f} MiB"
        )


if __name__ == "__main__":
    main()
