"""`manage.py backup` and `restore`: a snapshot rebuilds an empty studio row for row and file for file,
on whichever database the suite runs (SQLite, or PostgreSQL through DATABASE_URL), to a folder or S3;
a partial, truncated or corrupt snapshot is refused before anything is written."""

from __future__ import annotations

import datetime
import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tests.factories import AnnotationFactory, RecordedItemFactory, ReviewFactory, UserFactory
from tests.support.s3_server import S3Server, use_s3_media
from tests.webapp.backup_support import empty_studio, every_media_file, every_row
from webapp.backup import consistent_database, scheduled_backup, studio_is_empty
from webapp.celery import app as celery_app
from webapp.lib.snapshots import MANIFEST, MEDIA_INDEX, backup_schedule, snapshots_to_prune
from webapp.models import User


def _small_studio() -> None:
    item = RecordedItemFactory.create()
    take = item.recording
    ReviewFactory.create(take=take)
    AnnotationFactory.create(item=item)


def _backup(path: str) -> str:
    out = io.StringIO()
    call_command("backup", path, stdout=out)
    return out.getvalue()


def _restore(path: str, *args: str) -> str:
    out = io.StringIO()
    call_command("restore", path, *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def backed_up(transactional_db: None, media_root: Path, tmp_path: Path) -> Path:
    _small_studio()
    snapshot = tmp_path / "snapshot"
    _backup(str(snapshot))
    return snapshot


def test_a_small_studio_round_trips_and_shows_progress(
    transactional_db: None, media_root: Path, tmp_path: Path, settings: Any
) -> None:
    _small_studio()
    rows, media = every_row(), every_media_file()
    assert media, "the studio has audio to back up"

    printed = _backup(str(tmp_path / "snapshot"))
    assert "database: annotation.take: 1 rows" in printed and "media: " in printed
    manifest = json.loads((tmp_path / "snapshot" / MANIFEST).read_text())
    assert manifest["media"]["files"] == len(media)
    assert {table["model"]: table["rows"] for table in manifest["tables"]} == {
        label: count for label, (count, _) in rows.items()
    }
    assert manifest["migrations"] and manifest["app_version"]

    empty_studio(settings, tmp_path / "fresh-media")
    assert studio_is_empty()
    printed = _restore(str(tmp_path / "snapshot"))
    assert "verified every checksum" in printed and "Restored" in printed

    assert every_row() == rows
    assert every_media_file() == media
    # The restored studio goes on: new rows get new ids (sequences follow the restored rows).
    restored_last = max(User.objects.values_list("pk", flat=True))
    assert UserFactory.create().pk > restored_last
    assert not studio_is_empty()


def _refused_and_untouched(snapshot: Path, settings: Any, tmp_path: Path, words: str) -> None:
    empty_studio(settings, tmp_path / "fresh-media")
    with pytest.raises(CommandError, match=words):
        _restore(str(snapshot))
    assert studio_is_empty(), "a refused restore writes nothing"


def test_a_truncated_table_is_refused_before_anything_is_written(
    backed_up: Path, settings: Any, tmp_path: Path
) -> None:
    table = backed_up / "database" / "annotation.take.jsonl"
    table.write_bytes(table.read_bytes()[:-20])
    _refused_and_untouched(backed_up, settings, tmp_path, "annotation.take.jsonl is truncated")


def test_a_corrupt_media_file_is_refused(backed_up: Path, settings: Any, tmp_path: Path) -> None:
    wav = next((backed_up / "media").rglob("*.wav"))
    data = bytearray(wav.read_bytes())
    data[100] ^= 0xFF
    wav.write_bytes(bytes(data))
    _refused_and_untouched(backed_up, settings, tmp_path, "is corrupt")


def test_a_backup_that_did_not_finish_is_refused(backed_up: Path, settings: Any, tmp_path: Path) -> None:
    (backed_up / MANIFEST).unlink()
    _refused_and_untouched(backed_up, settings, tmp_path, "did not finish")


def test_an_edited_manifest_is_refused(backed_up: Path, settings: Any, tmp_path: Path) -> None:
    manifest = json.loads((backed_up / MANIFEST).read_text())
    manifest["tables"][0]["rows"] += 1
    (backed_up / MANIFEST).write_text(json.dumps(manifest))
    _refused_and_untouched(backed_up, settings, tmp_path, "its own checksum")


def test_a_missing_media_file_is_refused(backed_up: Path, settings: Any, tmp_path: Path) -> None:
    next((backed_up / "media").rglob("*.wav")).unlink()
    _refused_and_untouched(backed_up, settings, tmp_path, "missing from the snapshot")


def test_a_studio_with_work_in_it_is_not_overwritten_unless_told(backed_up: Path) -> None:
    before = every_row()
    UserFactory.create(username="newcomer")
    with pytest.raises(CommandError, match="not empty"):
        _restore(str(backed_up))
    assert User.objects.filter(username="newcomer").exists()

    _restore(str(backed_up), "--replace")
    assert not User.objects.filter(username="newcomer").exists()
    assert every_row() == before


def test_a_backup_refuses_a_folder_that_holds_something(transactional_db: None, tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "notes.txt").write_text("keep me")
    with pytest.raises(CommandError, match="not empty"):
        _backup(str(tmp_path / "old"))
    assert (tmp_path / "old" / "notes.txt").read_text() == "keep me"


def test_a_snapshot_on_s3_round_trips(
    transactional_db: None, media_root: Path, tmp_path: Path, settings: Any, s3_server: S3Server
) -> None:
    s3_server.client().create_bucket(Bucket="studio-backups")
    _small_studio()
    rows, media = every_row(), every_media_file()

    _backup("s3://studio-backups/nightly/one")
    listed = s3_server.client().list_objects_v2(Bucket="studio-backups", Prefix="nightly/one/")
    names = {entry["Key"] for entry in listed["Contents"]}
    assert {f"nightly/one/{MANIFEST}", f"nightly/one/{MEDIA_INDEX}"} <= names

    empty_studio(settings, tmp_path / "fresh-media")
    _restore("s3://studio-backups/nightly/one")
    assert every_row() == rows
    assert every_media_file() == media

    empty_studio(settings, tmp_path / "fresher-media")
    s3_server.client().delete_object(Bucket="studio-backups", Key=f"nightly/one/{MANIFEST}")
    with pytest.raises(CommandError, match="did not finish"):
        _restore("s3://studio-backups/nightly/one")
    assert studio_is_empty()


def test_rotation_keeps_the_newest_complete_snapshots_and_drops_abandoned_ones() -> None:
    names = ["snapshot-1", "snapshot-2", "snapshot-3", "snapshot-4", "snapshot-5", "notes"]
    complete = {"snapshot-1", "snapshot-3", "snapshot-4"}
    # 2 was abandoned (older than a complete one); 5 may be a backup still being written.
    assert snapshots_to_prune(names, complete, keep=2) == ["snapshot-1", "snapshot-2"]
    assert snapshots_to_prune(names, complete, keep=5) == ["snapshot-2"]


def test_the_beat_schedule_is_off_unless_a_target_and_a_count_are_set() -> None:
    assert backup_schedule("", 3, 24.0) == {}
    assert backup_schedule("/backups", 0, 24.0) == {}
    entry = backup_schedule("s3://lab/studio", 7, 24.0)["backup-snapshot"]
    assert entry == {"task": "webapp.backup_snapshot", "schedule": 86400.0}
    assert "webapp.backup_snapshot" in celery_app.tasks


def test_scheduled_backups_keep_the_newest_n(
    transactional_db: None, media_root: Path, tmp_path: Path, settings: Any
) -> None:
    settings.BACKUP_TARGET, settings.BACKUP_KEEP = str(tmp_path / "nightly"), 2
    _small_studio()
    (tmp_path / "nightly" / "keep-this-folder").mkdir(parents=True)
    start = datetime.datetime(2026, 12, 1, 2, 0, tzinfo=datetime.UTC)
    made = [scheduled_backup(start + datetime.timedelta(days=day)) for day in range(3)]

    assert sorted(path.name for path in (tmp_path / "nightly").iterdir()) == sorted(
        [*made[1:], "keep-this-folder"]
    )
    empty_studio(settings, tmp_path / "fresh-media")
    _restore(str(tmp_path / "nightly" / made[-1]))
    assert not studio_is_empty()


def _in_another_connection(work: Any) -> None:
    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def test_the_dump_reads_one_moment_while_the_studio_goes_on(transactional_db: None) -> None:
    UserFactory.create(username="before")
    with consistent_database() as alias:
        seen = set(User._base_manager.using(alias).values_list("username", flat=True))
        _in_another_connection(lambda: UserFactory.create(username="during"))
        assert set(User._base_manager.using(alias).values_list("username", flat=True)) == seen
    assert seen == {"before"}
    assert User.objects.filter(username="during").exists()


def test_media_on_s3_round_trip_into_a_fresh_bucket(
    transactional_db: None, tmp_path: Path, settings: Any, s3_server: S3Server
) -> None:
    client = s3_server.client()
    for bucket in ("studio-media", "restored-media"):
        client.create_bucket(Bucket=bucket)
    use_s3_media(settings, "studio-media", endpoint_url=s3_server.endpoint_url, region_name="us-east-1")
    _small_studio()
    rows, media = every_row(), every_media_file()
    assert media

    _backup(str(tmp_path / "snapshot"))
    call_command("flush", interactive=False, verbosity=0)
    use_s3_media(settings, "restored-media", endpoint_url=s3_server.endpoint_url, region_name="us-east-1")
    assert studio_is_empty()
    _restore(str(tmp_path / "snapshot"))
    assert every_row() == rows
    assert every_media_file() == media
