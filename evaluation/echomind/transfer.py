"""Import and export in EchoMind's released layout (`layout`): a lab brings its set in (scripts,
deliveries with or without audio, questions) and takes it, with its systems' answers, back out.

Imported audio becomes each delivery's accepted take, the importing admin as its actor: it was made
and checked outside the studio, so no reviewer sees it (and it is not measured on the way in). A
file with any problem is refused whole.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.audio.upload import normalise_upload
from annotation.recording.models import Item, Take
from evaluation.echomind import layout
from evaluation.echomind.deliveries import DeliveryProblem, create_delivery_set, ensure_default_taxonomy
from evaluation.echomind.models import Answer, Delivery, DeliverySet, Question, Reply, Transcript
from evaluation.outputs.parsing import unsafe_path_reason
from webapp.lib.archives import ArchiveRefused, UnpackBudget, UnpackLimits, check_listing, read_member
from webapp.models import User
from webapp.storage import new_media_key, read_media, save_media

MAX_ARCHIVE_FILES = 20_000
MAX_UNPACKED_BYTES = 2 * 1024**3  # one set's archive, unpacked (held in memory while imported)


@dataclass(frozen=True)
class LayoutReport:
    cases: int = 0
    questions: int = 0
    audio: int = 0
    unchanged: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def imported(self) -> bool:
        return not self.problems


def read_archive(data: bytes) -> dict[str, bytes]:
    """Return the files of a zip by name (one top folder, if all share it, taken off); its caps
    (files, bytes unpacked, expansion) are checked on the listing and on the bytes that come out,
    all of it held in memory (webapp.lib.archives)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise DeliveryProblem("The upload is not a zip archive.") from error
    members = [info for info in archive.infolist() if not info.is_dir()]
    if len(members) > MAX_ARCHIVE_FILES:
        raise DeliveryProblem(f"The archive holds more than {MAX_ARCHIVE_FILES} files.")
    for member in members:
        if reason := unsafe_path_reason(member.filename):
            raise DeliveryProblem(f"The archive holds {reason}.")
    limits = UnpackLimits(
        max_members=MAX_ARCHIVE_FILES,
        max_bytes=MAX_UNPACKED_BYTES,
        max_member_bytes=int(settings.UPLOAD_MAX_BYTES),
        max_ratio=float(settings.ARCHIVE_MAX_RATIO),
    )
    try:
        check_listing(members, limits, len(data))
        budget = UnpackBudget(limits)
        unpacked = {member.filename: read_member(archive, member, budget) for member in members}
    except ArchiveRefused as refused:
        raise DeliveryProblem(f"The archive is refused: {refused}.") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
        raise DeliveryProblem(f"The archive is damaged ({error}).") from None
    names = list(unpacked)
    tops = {name.split("/", 1)[0] for name in names}
    strip = len(tops) == 1 and all("/" in name for name in names)
    return {(name.split("/", 1)[1] if strip else name): unpacked[name] for name in names}


def write_archive(files: Mapping[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            archive.writestr(zipfile.ZipInfo(name, date_time=(2025, 1, 1, 0, 0, 0)), files[name])
    return out.getvalue()


def import_layout(files: Mapping[str, bytes], by: User) -> LayoutReport:
    """Create the cases, deliveries (with their audio when given) and questions of a released set;
    a case already here with the same script and attribute counts as unchanged."""
    ensure_default_taxonomy()
    cases, problems = [], []
    for name in sorted(files):
        if layout.SCRIPT_INFO.fullmatch(name):
            rows, found = layout.read_script_info(name, files[name])
            cases.extend(rows)
            problems.extend(found)
    questions = []
    for level, name in layout.MCQ_FILES.items():
        if name in files:
            rows_q, found = layout.read_mcq(level, files[name])
            questions.extend(rows_q)
            problems.extend(found)
    if not cases and not problems:
        problems.append("No script_info_<type>.json in the upload.")
    audio_of = {name.rsplit("/", 1)[-1]: data for name, data in files.items() if name.endswith(".wav")}
    if problems:
        return LayoutReport(problems=problems)
    try:
        with transaction.atomic():
            report = _write(cases, questions, audio_of, by)
            if report.problems:
                raise _Refused(report)
            return report
    except _Refused as refused:
        return refused.report


class _Refused(Exception):
    def __init__(self, report: LayoutReport) -> None:
        self.report = report


def _write(
    cases: list[layout.CaseRow], questions: list[layout.QuestionRow], audio_of: dict[str, bytes], by: User
) -> LayoutReport:
    problems: list[str] = []
    made = unchanged = audio = 0
    deliveries_by_file: dict[str, Delivery] = {}
    for row in cases:
        existing = DeliverySet.objects.filter(case_id=row.case_id).first()
        if existing is not None:
            if existing.text != row.text or existing.attribute.code != row.attribute:
                problems.append(f"{row.case_id} is already here with another script or attribute")
            unchanged += 1
            case = existing
        else:
            try:
                case = create_delivery_set(
                    case_id=row.case_id,
                    script_type=row.script_type,
                    topic=row.topic,
                    text=row.text,
                    attribute=row.attribute,
                    alternative=row.alternative_attribute,
                )
            except DeliveryProblem as problem:
                problems.append(str(problem))
                continue
            made += 1
        for delivery in case.deliveries.select_related("item"):
            name = row.audio.get(delivery.role, "")
            if name and not delivery.audio_file:
                delivery.audio_file = name
                delivery.save(update_fields=["audio_file"])
            if name in audio_of and delivery.item.recording_id is None:
                _store_imported_take(delivery.item, audio_of[name], by)
                audio += 1
            deliveries_by_file[delivery.audio_name()] = delivery
    written = 0
    for question in questions:
        target = deliveries_by_file.get(question.audio)
        if target is None:
            problems.append(f"{question.question_id}: no delivery has the audio {question.audio}")
            continue
        Question.objects.update_or_create(
            question_id=question.question_id,
            defaults={
                "delivery": target,
                "level": question.level,
                "question_type": question.question_type,
                "text": question.question,
                "options": question.options,
                "answer": question.answer,
            },
        )
        written += 1
    return LayoutReport(made, written, audio, unchanged, problems)


def _store_imported_take(item: Item, data: bytes, by: User) -> Take:
    audio = normalise_upload(data, "imported.wav")
    key = save_media(new_media_key("take", "wav"), audio.wav_bytes)
    now = timezone.now()
    take = Take.objects.create(
        item=item,
        actor=by,
        status=Take.Status.ACCEPTED,
        audio_key=key,
        original_key=save_media(new_media_key("original", "wav"), data),
        original_format="wav",
        duration_seconds=audio.duration_seconds,
        decided_at=now,
    )
    item.recording, item.state = take, Item.State.RECORDED
    item.save(update_fields=["recording", "state", "updated_at"])
    return take


def export_layout() -> dict[str, bytes]:
    """Return every case in the released layout, with accepted audio, questions and, per system,
    its answers, transcripts and replies (answers/<system>.jsonl, responses/<system>/...)."""
    files: dict[str, bytes] = {}
    by_type: dict[str, list[layout.CaseRow]] = {}
    deliveries = Delivery.objects.select_related("delivery_set__attribute", "attribute", "item__recording")
    grouped: dict[int, list[Delivery]] = {}
    for delivery in deliveries:
        grouped.setdefault(delivery.delivery_set_id, []).append(delivery)
        take = delivery.item.recording
        if take is not None:
            files[layout.AUDIO_DIR + delivery.audio_name()] = _original_or_audio(take)
    for case in DeliverySet.objects.select_related("attribute"):
        parts = grouped.get(case.pk, [])
        alternative = next(
            (d.attribute.code for d in parts if d.role == Delivery.Role.ALTERNATIVE and d.attribute), ""
        )
        by_type.setdefault(case.script_type, []).append(
            layout.CaseRow(
                case.case_id,
                case.script_type,
                case.topic,
                case.text,
                case.attribute.code,
                alternative,
                {d.role: d.audio_name() for d in parts},
            )
        )
    for script_type, rows in by_type.items():
        files[f"script_info_{script_type}.json"] = layout.dumps(layout.script_info_document(rows))
    for level, name in layout.MCQ_FILES.items():
        rows_q = [
            layout.QuestionRow(
                q.question_id, q.level, q.delivery.audio_name(), q.text, q.options, q.answer, q.question_type
            )
            for q in Question.objects.filter(level=level).select_related("delivery__delivery_set__attribute")
        ]
        if rows_q:
            files[name] = layout.dumps(layout.mcq_document(rows_q))
    files.update(_system_files())
    return files


def _original_or_audio(take: Take) -> bytes:
    # A WAV (imported, or uploaded as WAV) goes back out byte for byte; other uploads as the 16 kHz WAV.
    return read_media(take.original_key if take.original_format == "wav" else take.audio_key)


def _system_files() -> dict[str, bytes]:
    lines: dict[str, list[str]] = {}
    files: dict[str, bytes] = {}
    for answer in Answer.objects.select_related("system", "question").order_by(
        "system__name", "question__question_id"
    ):
        row = {"question_id": answer.question.question_id, "answer": answer.raw_text}
        lines.setdefault(answer.system.name, []).append(json.dumps(row, ensure_ascii=False))
    for transcript in Transcript.objects.select_related("system", "delivery__delivery_set__attribute"):
        row = {"delivery": transcript.delivery.audio_name(), "transcript": transcript.text}
        lines.setdefault(transcript.system.name, []).append(json.dumps(row, ensure_ascii=False))
    for reply in Reply.objects.select_related("system", "delivery__delivery_set__attribute"):
        name = reply.delivery.audio_name()
        row = {"delivery": name, "prompt": reply.prompt, "response": reply.text, "scores": reply.scores}
        lines.setdefault(reply.system.name, []).append(json.dumps(row, ensure_ascii=False, sort_keys=True))
        if reply.audio_key:
            files[f"responses/{_safe(reply.system.name)}/{layout.response_name(name)}"] = read_media(
                reply.audio_key
            )
    for system, rows in lines.items():
        files[f"answers/{_safe(system)}.jsonl"] = ("\n".join(rows) + "\n").encode()
    return files


def _safe(name: str) -> str:
    return "".join(char if char.isalnum() or char in "-_." else "-" for char in name)
