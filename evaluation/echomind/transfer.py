"""Import and export in EchoMind's released layout (`layout`): a lab brings its set in (scripts,
deliveries with or without audio, questions) and takes it, with its systems' answers, back out.

A release's attribute names are its own ("angry", "sound of wind blowing", "elderly"): they are
mapped onto the taxonomy (`taxonomy.AttributeNames`); a name that matches nothing refuses its case,
naming the nearest known names. Every file of an upload is accounted for in the import's report:
imported, unchanged (already here) or refused with the reason; what can be imported is, whatever
else is refused. Each upload is a `DeliveryImport`, the scope of its question ids: a question id
another import (or the questions page) already uses for another question is a new question of this
import, so no earlier question, and none of its answers, is ever re-bound.

Imported audio becomes each delivery's accepted take, the importing admin as its actor: it was made
and checked outside the studio, so no reviewer sees it (and it is not measured on the way in).
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from annotation.audio.upload import AudioRejected, normalise_upload
from annotation.recording.models import Item, Take
from evaluation.echomind import layout
from evaluation.echomind.deliveries import DeliveryProblem, create_delivery_set, ensure_default_taxonomy
from evaluation.echomind.models import (
    Answer,
    Delivery,
    DeliveryImport,
    DeliverySet,
    Question,
    Reply,
    Transcript,
    VocalAttribute,
)
from evaluation.echomind.taxonomy import AttributeNames, UnknownName
from evaluation.outputs.parsing import unsafe_path_reason
from webapp.lib.archives import (
    ArchiveRefused,
    UnpackBudget,
    UnpackLimits,
    archive_member,
    check_listing,
    read_member,
)
from webapp.lib.jsonlines import json_text
from webapp.models import User
from webapp.storage import new_media_key, read_media, save_media

MAX_ARCHIVE_FILES = 20_000
MAX_UNPACKED_BYTES = 2 * 1024**3  # one set's archive, unpacked (held in memory while imported)
IMPORTED, UNCHANGED, REFUSED = "imported", "unchanged", "refused"


@dataclass(frozen=True)
class FileOutcome:
    """What became of one file of an upload: imported, unchanged (all of it already here) or
    refused, and in words what (counts, the take it became) or why."""

    name: str
    status: str
    detail: str


@dataclass(frozen=True)
class LayoutReport:
    cases: int = 0
    questions: int = 0
    audio: int = 0
    unchanged: int = 0  # cases already here
    questions_unchanged: int = 0
    problems: list[str] = field(default_factory=list)  # every refusal, one sentence each
    files: list[FileOutcome] = field(default_factory=list)  # one per uploaded file, by name
    import_id: int | None = None

    @property
    def imported(self) -> bool:
        """Whether nothing was refused."""
        return not self.problems

    def count(self, status: str) -> int:
        return sum(outcome.status == status for outcome in self.files)

    def as_dict(self) -> dict[str, Any]:
        """Return the report as the page shows and the API returns it (JSON-ready)."""
        return {
            "import": self.import_id,
            "cases": self.cases,
            "questions": self.questions,
            "audio": self.audio,
            "unchanged": self.unchanged,
            "questions_unchanged": self.questions_unchanged,
            "files_imported": self.count(IMPORTED),
            "files_unchanged": self.count(UNCHANGED),
            "files_refused": self.count(REFUSED),
            "problems": list(self.problems),
            "files": [asdict(outcome) for outcome in self.files],
        }


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


MAX_UPLOAD_BYTES = 512 * 1024 * 1024


def uploaded_files(uploads: Iterable[UploadedFile]) -> dict[str, bytes]:
    """Return the files of an upload (zips opened, MCQ files put in their folder) by name."""
    files: dict[str, bytes] = {}
    for upload in uploads:
        if (upload.size or 0) > MAX_UPLOAD_BYTES:
            raise DeliveryProblem(f"{upload.name} is larger than {MAX_UPLOAD_BYTES // 2**20} MiB.")
        data = upload.read()
        name = upload.name or ""
        if name.lower().endswith(".zip"):
            files.update(read_archive(data))
        else:
            # A browser sends base names only: an MCQ file keeps its folder by its name.
            stem = name.rsplit("/", 1)[-1]
            files[f"MCQ/{stem}" if stem in ("understanding.json", "reasoning.json") else stem] = data
    return files


def upload_name(uploads: Sequence[UploadedFile]) -> str:
    """Return what an import is called after: the one file's name, or how many files."""
    return (uploads[0].name or "") if len(uploads) == 1 else f"{len(uploads)} files"


def write_archive(files: Mapping[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            archive.writestr(archive_member(name), files[name])
    return out.getvalue()


class _Ledger:
    """Per uploaded file: what of it was imported, found unchanged, or refused (and why)."""

    def __init__(self, names: list[str]) -> None:
        self.made: dict[str, list[str]] = {name: [] for name in names}
        self.same: dict[str, list[str]] = {name: [] for name in names}
        self.refused: dict[str, list[str]] = {name: [] for name in names}
        self.problems: list[str] = []

    def imported(self, name: str, what: str) -> None:
        self.made[name].append(what)

    def unchanged(self, name: str, what: str) -> None:
        self.same[name].append(what)

    def refuse(self, name: str, why: str) -> None:
        self.refused[name].append(why)
        self.problems.append(why if why.startswith(name) else f"{name}: {why}")

    def outcomes(self) -> list[FileOutcome]:
        outcomes = []
        for name in sorted(self.made):
            made, same, refused = self.made[name], self.same[name], self.refused[name]
            status = IMPORTED if made else UNCHANGED if same else REFUSED
            parts = []
            if made:
                parts.append(_summary(made))
            if same:
                parts.append(_summary(same) + " already here")
            if refused:
                parts.append("refused: " + "; ".join(refused))
            outcomes.append(FileOutcome(name, status, "; ".join(parts) or "refused: nothing in it was read"))
        return outcomes


def _summary(whats: list[str]) -> str:
    """ "2 cases" from ["case", "case"]; one thing is named as it is ("take of EM-id_1-target")."""
    if len(whats) == 1:
        return whats[0]
    kinds: dict[str, int] = {}
    for what in whats:
        kind = what.split(" ", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{count} {kind}s" for kind, count in kinds.items())


def import_layout(files: Mapping[str, bytes], by: User, name: str = "") -> LayoutReport:
    """Create the cases, deliveries (with their audio when given) and questions of a released set,
    as much of it as is sound; return the report that accounts for every file (also stored with
    the import). A case already here with the same script and attribute counts as unchanged."""
    ensure_default_taxonomy()
    ledger = _Ledger(list(files))
    cases: list[tuple[str, layout.CaseRow]] = []
    questions: list[tuple[str, layout.QuestionRow]] = []
    for file_name in sorted(files):
        if layout.SCRIPT_INFO.fullmatch(file_name):
            rows, found = layout.read_script_info(file_name, files[file_name])
            cases.extend((file_name, row) for row in rows)
            for problem in found:
                ledger.refuse(file_name, problem)
    for level, file_name in layout.MCQ_FILES.items():
        if file_name in files:
            rows_q, found = layout.read_mcq(level, files[file_name])
            questions.extend((file_name, row) for row in rows_q)
            for problem in found:
                ledger.refuse(file_name, problem)
    with transaction.atomic():
        record = DeliveryImport.objects.create(by=by, name=name[:200])
        counts = _write(files, cases, questions, by, record, ledger)
        report = LayoutReport(*counts, problems=ledger.problems, files=ledger.outcomes(), import_id=record.pk)
        record.report = report.as_dict()
        record.save(update_fields=["report"])
    return report


def report_of(record: DeliveryImport) -> LayoutReport:
    """Return the report an import stored (as `import_layout` returned it)."""
    data = record.report or {}
    return LayoutReport(
        data.get("cases", 0),
        data.get("questions", 0),
        data.get("audio", 0),
        data.get("unchanged", 0),
        data.get("questions_unchanged", 0),
        list(data.get("problems", [])),
        [FileOutcome(**row) for row in data.get("files", [])],
        record.pk,
    )


def _write(
    files: Mapping[str, bytes],
    cases: list[tuple[str, layout.CaseRow]],
    questions: list[tuple[str, layout.QuestionRow]],
    by: User,
    record: DeliveryImport,
    ledger: _Ledger,
) -> tuple[int, int, int, int, int]:
    names = AttributeNames(VocalAttribute.objects.values_list("code", "label"))
    made = unchanged = 0
    claimed: dict[str, Delivery] = {}  # audio file name -> the delivery it records
    refused_audio: dict[str, str] = {}  # audio file name -> why its case was refused
    seen_cases: set[str] = set()
    deliveries_by_file: dict[str, Delivery] = {}
    for file_name, row in cases:
        where = f"{row.case_id}"
        case, why = None, ""
        if row.case_id in seen_cases:
            why = f"{where} appears twice in the upload"
        else:
            seen_cases.add(row.case_id)
            try:
                attribute = names.code_of(row.attribute)
                alternative = names.code_of(row.alternative_attribute) if row.alternative_attribute else ""
            except UnknownName as unknown:
                why = f"{where}: {unknown}"
            else:
                case, why, is_new = _case(row, attribute, alternative)
                if case is not None and is_new:
                    made += 1
                    ledger.imported(file_name, f"case {row.case_id}")
                elif case is not None:
                    unchanged += 1
                    ledger.unchanged(file_name, f"case {row.case_id}")
        if case is None:
            ledger.refuse(file_name, why)
            for audio_name in row.audio.values():
                refused_audio.setdefault(audio_name, f"its case {row.case_id} was refused ({why})")
            continue
        deliveries = case.deliveries.select_related("item", "delivery_set__attribute")
        roles = {delivery.role: delivery for delivery in deliveries}
        for role, audio_name in row.audio.items():
            delivery = roles.get(role)
            if delivery is None:
                refused_audio.setdefault(audio_name, f"case {row.case_id} has no {role} delivery")
            elif audio_name in claimed:
                refused_audio.setdefault(audio_name, f"named by two deliveries ({claimed[audio_name].item})")
            else:
                if not delivery.audio_file:
                    delivery.audio_file = audio_name
                    delivery.save(update_fields=["audio_file"])
                claimed[audio_name] = delivery
        for delivery in roles.values():
            deliveries_by_file[delivery.audio_name()] = delivery
    audio = _write_audio(files, claimed, refused_audio, by, ledger)
    written, same = _write_questions(questions, deliveries_by_file, record, ledger)
    for file_name in files:
        if not (
            layout.SCRIPT_INFO.fullmatch(file_name)
            or file_name in layout.MCQ_FILES.values()
            or file_name.lower().endswith(".wav")
        ):
            ledger.refuse(file_name, "not part of EchoMind's layout (script_info_<type>.json, MCQ/, audio/)")
    if not cases and not any(ledger.refused[name] for name in files if layout.SCRIPT_INFO.fullmatch(name)):
        ledger.problems.append("No script_info_<type>.json in the upload.")
    return made, written, audio, unchanged, same


def _case(row: layout.CaseRow, attribute: str, alternative: str) -> tuple[DeliverySet | None, str, bool]:
    """Return the case of a row (new or already here, and which) or None and why it is refused."""
    existing = DeliverySet.objects.filter(case_id=row.case_id).select_related("attribute").first()
    if existing is not None:
        if existing.text != row.text or existing.attribute.code != attribute:
            return None, f"{row.case_id} is already here with another script or attribute", False
        return existing, "", False
    try:
        case = create_delivery_set(
            case_id=row.case_id,
            script_type=row.script_type,
            topic=row.topic,
            text=row.text,
            attribute=attribute,
            alternative=alternative,
            # A release that recorded a neutral delivery has one, whatever the dimension.
            neutral=True if "neutral" in row.audio else None,
        )
    except DeliveryProblem as problem:
        return None, str(problem), False
    return case, "", True


def _write_audio(
    files: Mapping[str, bytes],
    claimed: dict[str, Delivery],
    refused_audio: dict[str, str],
    by: User,
    ledger: _Ledger,
) -> int:
    stored = 0
    first_of: dict[str, str] = {}
    for file_name in sorted(files):
        if not file_name.lower().endswith(".wav"):
            continue
        base = file_name.rsplit("/", 1)[-1]
        delivery = claimed.get(base)
        if base in first_of:
            ledger.refuse(file_name, f"the same file name as {first_of[base]}")
            continue
        first_of[base] = file_name
        if delivery is not None and delivery.item.recording_id is None:
            try:
                _store_imported_take(delivery.item, files[file_name], by)
            except AudioRejected as rejected:
                ledger.refuse(file_name, f"not readable audio ({rejected.reason})")
            else:
                stored += 1
                ledger.imported(file_name, f"take of {delivery.item.external_id}")
        elif delivery is not None:
            ledger.unchanged(file_name, f"the accepted take of {delivery.item.external_id}")
        elif base in refused_audio:
            ledger.refuse(file_name, refused_audio[base])
        elif base.endswith("_response.wav"):
            ledger.refuse(file_name, "a system's spoken reply: import it with that system's answers")
        else:
            ledger.refuse(file_name, "no case of the upload names this recording")
    return stored


def _write_questions(
    questions: list[tuple[str, layout.QuestionRow]],
    deliveries_by_file: dict[str, Delivery],
    record: DeliveryImport,
    ledger: _Ledger,
) -> tuple[int, int]:
    """Create this import's questions; one the same as a question already here (id, delivery,
    text, options, key) is unchanged; return (written, unchanged)."""
    written = same = 0
    first_in: dict[str, str] = {}
    earlier_of: dict[tuple[str, int], list[Question]] = {}
    for earlier in Question.objects.in_use().filter(question_id__in={q.question_id for _, q in questions}):
        earlier_of.setdefault((earlier.question_id, earlier.delivery_id), []).append(earlier)
    for file_name, question in questions:
        qid = question.question_id
        target = deliveries_by_file.get(question.audio)
        if qid in first_in:
            ledger.refuse(file_name, f"{qid} appears twice in the upload (first in {first_in[qid]})")
            continue
        first_in[qid] = file_name
        if target is None:
            ledger.refuse(file_name, f"{qid}: no delivery has the audio {question.audio}")
            continue
        fields = {
            "delivery": target,
            "level": question.level,
            "question_type": question.question_type,
            "text": question.question,
            "options": question.options,
            "answer": question.answer,
        }
        if any(
            all(getattr(earlier, key) == value for key, value in fields.items() if key != "delivery")
            for earlier in earlier_of.get((qid, target.pk), [])
        ):
            same += 1
            ledger.unchanged(file_name, f"question {qid}")
            continue
        Question.objects.create(question_id=qid, source=record, **fields)
        written += 1
        ledger.imported(file_name, f"question {qid}")
    return written, same


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
            files[layout.AUDIO_DIR + delivery.audio_name()] = original_or_audio(take)
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
            for q in Question.objects.in_use()
            .filter(level=level)
            .select_related("delivery__delivery_set__attribute")
        ]
        if rows_q:
            files[name] = layout.dumps(layout.mcq_document(rows_q))
    files.update(_system_files())
    return files


def original_or_audio(take: Take) -> bytes:
    # A WAV (imported, or uploaded as WAV) goes back out byte for byte; other uploads as the 16 kHz WAV.
    return read_media(take.original_key if take.original_format == "wav" else take.audio_key)


def _system_files() -> dict[str, bytes]:
    lines: dict[str, list[str]] = {}
    files: dict[str, bytes] = {}
    shared = _shared_question_ids()
    for answer in (
        Answer.objects.in_use("question")
        .select_related("system", "question")
        .order_by("system__name", "question__question_id", "question__source_id")
    ):
        question = answer.question
        row: dict[str, Any] = {"question_id": question.question_id, "answer": answer.raw_text}
        if question.question_id in shared:  # scoped to its import only where the id alone is ambiguous
            row = {
                "question_id": question.question_id,
                "import": question.source_id,
                "answer": answer.raw_text,
            }
        lines.setdefault(answer.system.name, []).append(json_text(row))
    for transcript in Transcript.objects.in_use().select_related(
        "system", "delivery__delivery_set__attribute"
    ):
        row = {"delivery": transcript.delivery.audio_name(), "transcript": transcript.text}
        lines.setdefault(transcript.system.name, []).append(json_text(row))
    for reply in Reply.objects.in_use().select_related("system", "delivery__delivery_set__attribute"):
        name = reply.delivery.audio_name()
        row = {"delivery": name, "prompt": reply.prompt, "response": reply.text, "scores": reply.scores}
        lines.setdefault(reply.system.name, []).append(json_text(row, sort_keys=True))
        if reply.audio_key:
            files[f"responses/{_safe(reply.system.name)}/{layout.response_name(name)}"] = read_media(
                reply.audio_key
            )
    for system, rows in lines.items():
        files[f"answers/{_safe(system)}.jsonl"] = ("\n".join(rows) + "\n").encode()
    return files


def _shared_question_ids() -> set[str]:
    """Return the question ids more than one question bears (each of another import)."""
    ids = Question.objects.in_use().values_list("question_id", flat=True)
    seen: set[str] = set()
    shared: set[str] = set()
    for qid in ids:
        (shared if qid in seen else seen).add(qid)
    return shared


def _safe(name: str) -> str:
    return "".join(char if char.isalnum() or char in "-_." else "-" for char in name)
