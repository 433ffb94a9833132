"""Every CSV, LaTeX and JSON export, and the ``echostudio`` CLI, with hostile names and free text
(issue 40).

Systems, the judge, items, gold (its note, reference reply and adjudicator), annotators, dialogues
and EchoMind answers carry spreadsheet formulas (``=cmd|' /C calc'!A0``, ``=SUM(1;2)``), every line
and record break some reader splits at (U+2028, U+2029, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\v``,
``\\f``, CR/LF), TeX's ``^^`` spelling of ``\\input{/etc/passwd}``, ``Qwen$2`` and a terminal escape.
Every export route is fetched (none may answer 500), and each answer is read back by an oracle of
its own, not the writer under test: CSV by ``csv.reader`` (one width, no live formula, every break
inside a quoted cell), LaTeX row by row (column count, no special character left bare, no ``^^``),
JSON by ``json.loads`` and JSON Lines line by line however lines are split. A route that looks
like an export but is neither swept here nor exempted with its reason fails the last test.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import get_resolver, reverse
from django.utils import timezone

from annotation.gold.models import GoldReference
from annotation.gold.transfer import jobs as transfer_jobs
from annotation.labelling.models import Annotation
from annotation.recording.models import Dialogue, Item
from evaluation.echomind.answers import import_answers
from evaluation.echomind.transfer import import_layout
from evaluation.judging.models import JudgeConfig, Judgement, JudgeRun
from evaluation.outputs.models import System
from tests.annotation.labelling.support import (
    SCRIPT,
    LabellingItemFactory,
    assign,
    perception,
    submitted,
    tom,
)
from tests.evaluation.echomind.fixture import echomind_files
from tests.evaluation.results.dialogue_hand_computed import store_dialogues
from tests.evaluation.results.hand_computed import SCORES
from tests.evaluation.results.test_leaderboard_pages import store
from tests.factories import JudgeConfigFactory, SystemFactory, UserFactory
from tests.support.routes import site_patterns
from webapp.client import session
from webapp.client.__main__ import run
from webapp.jobs import run_job
from webapp.lib.latex import SPECIALS
from webapp.models import User
from webapp.roles import Role

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

BREAKS = "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def hostile(tag: str, start: str = "=cmd|' /C calc'!A0", crlf: bool = True) -> str:
    """Return every payload of the issue in one text of at most 120 characters, named by `tag`
    (without CR/LF, `csv.writer` alone would leave the other breaks unquoted)."""
    breaks = " a\r\nb" if crlf else ""
    return (
        f"{start} {tag} =SUM(1;2) \u2028\u2029\x1c\x1d\x1e\x85\v\f ^^5cinput^^7b/etc/passwd^^7d Qwen$2"
        f"{breaks}\x1b[2J"
    )


SYSTEMS = {"A": hostile("sysA"), "B": hostile("sysB", "=SUM(1;2)"), "C": hostile("sysC", "@x", crlf=False)}
JUDGE = hostile("judge")
ECHO_SYSTEM = hostile("echo", "+cmd", crlf=False)


def _no_formula(cell: str) -> bool:
    return not cell.startswith(("=", "+", "-", "@", "\t", "\r", "\n")) or bool(
        re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", cell)
    )


def read_csv(text: str, where: str) -> list[list[str]]:
    """Return the rows of a CSV answer, failing on a live formula or a row broken by a separator."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len({len(row) for row in rows}) == 1, f"{where}: rows of different widths"
    bare = re.sub(r'"(?:[^"]|"")*"', "", text)  # the text outside quoted cells
    assert not any(char in bare for char in BREAKS.replace("\n", "")), f"{where}: a break outside a cell"
    assert bare.count("\n") == len(rows), f"{where}: a line break outside a cell"
    formulas = [cell for row in rows for cell in row if not _no_formula(cell)]
    assert formulas == [], f"{where}: live formulas"
    return rows


_LATEX_ESCAPES = re.compile("|".join(re.escape(value) for value in SPECIALS.values()))


def read_latex(text: str, where: str) -> list[str]:
    """Return the first cell (the name) of every table row, failing on a broken row or a bare special."""
    assert "^^" not in text and r"\input" not in text, f"{where}: TeX's ^^ notation"
    hidden = [char for char in text if char != "\n" and unicodedata.category(char) in ("Cc", "Zl", "Zp")]
    assert hidden == [], f"{where}: control characters"
    names = []
    for table in re.findall(r"\\begin\{tabular\}\{(\w+)\}(.*?)\\end\{tabular\}", text, re.S):
        spec, body = table
        rows = body.split(r"\midrule")[1].split(r"\bottomrule")[0].strip().split("\n")
        for row in rows:
            assert row.endswith("\\\\"), f"{where}: a row broken in two: {row!r}"
            cells = re.split(r"(?<!\\)&", row)
            assert len(cells) == len(spec), f"{where}: {len(cells)} cells in {row!r}"
            name = _LATEX_ESCAPES.sub("", cells[0])
            assert not re.search(r"[\\{}$&#^_~%<>|\[\]]", name), f"{where}: a bare special in {cells[0]!r}"
            names.append(cells[0])
    return names


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def read_json_lines(text: str, where: str) -> list[str]:
    """Return every string of a JSON Lines answer, failing when a line splits a record."""
    lines = text.splitlines()  # every Unicode break: a raw U+2028 would split a record here
    assert len(lines) == text.count("\n"), f"{where}: a record split by a raw separator"
    return [found for line in lines for found in strings(json.loads(line))]


def body(response: Any) -> bytes:
    assert response.status_code == 200, (response.status_code, response.content[:300])
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return bytes(response.content)


def read_zip(content: bytes, where: str) -> list[str]:
    found: list[str] = []
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        for name in archive.namelist():
            if name.endswith(".jsonl"):
                found += read_json_lines(archive.read(name).decode(), f"{where}:{name}")
            elif name.endswith(".json"):
                found += list(strings(json.loads(archive.read(name))))
    return found


# --- The world ------------------------------------------------------------------------------------


@pytest.fixture
def judge(db: None, users: dict[str, User]) -> JudgeConfig:
    config = JudgeConfigFactory.create(name="gpt-judge")
    store(SCORES, config)
    dialogues = store_dialogues(config)
    for old, new in SYSTEMS.items():
        System.objects.filter(name=old).update(name=new)
    JudgeConfig.objects.filter(pk=config.pk).update(name=JUDGE)
    config.refresh_from_db()
    for number, dialogue in enumerate(dialogues.values()):
        Dialogue.objects.filter(pk=dialogue.pk).update(topic=hostile(f"topic{number}"))
        for item in dialogue.turns.all():
            Item.objects.filter(pk=item.pk).update(text=hostile(f"turn{item.pk}"))
    run_ = JudgeRun.objects.create(
        system=System.objects.get(name=SYSTEMS["A"]), benchmark_version="echoeval-v1", judge_config=config
    )
    ids = list(
        Judgement.objects.filter(judge_config=config, output__system=run_.system).values_list("pk", flat=True)
    )
    Judgement.objects.filter(pk__in=ids).update(run=run_, rationale=hostile("rationale"))
    # EchoMind: a system with a hostile name whose answer is hostile free text.
    import_layout(echomind_files(), users["admin"])
    answer = json.dumps({"question_id": "u1", "answer": hostile("answer") + " The answer is: [B]"})
    import_answers(SystemFactory.create(name=ECHO_SYSTEM), answer.encode() + b"\n")
    # Gold: an item, its gold and two annotators' labels, every free-text field hostile.
    item = LabellingItemFactory.create(
        split="test",
        external_id="HOSTILE-1",
        text=f"{hostile('text')} {SCRIPT}",
        instructions=hostile("instructions"),
    )
    annotators = [
        UserFactory.create(role=Role.ANNOTATOR, username=hostile(f"ann{n}")[:150]) for n in range(2)
    ]
    for annotation in assign(item, *annotators):
        submitted(annotation, perception=perception(prosody_caption=hostile("caption")), tom=tom())
    GoldReference.objects.add_current_version(
        item,
        perception=perception(situation=hostile("situation")),
        tom=tom(context=hostile("context")),
        note=hostile("note"),
        reference_response=hostile("reply"),
    )
    Item.objects.filter(pk=item.pk).update(state=Item.State.GOLD)
    Annotation.objects.filter(item=item).update(submitted_at=timezone.now())
    return config


def _cli(client: Client, monkeypatch: pytest.MonkeyPatch) -> Callable[..., str]:
    """Return a runner of `echostudio` whose HTTP goes to the test client (logged in as admin)."""

    def answer(request: httpx.Request) -> httpx.Response:
        response = client.generic(request.method, request.url.raw_path.decode(), request.content)
        return httpx.Response(
            response.status_code, headers={"Content-Type": response["Content-Type"]}, content=body(response)
        )

    real = httpx.Client
    monkeypatch.setattr(
        session.httpx, "Client", lambda **options: real(transport=httpx.MockTransport(answer), **options)
    )

    def cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> str:
        assert run(["--url", "http://studio", "--token", "session", "--quiet", *argv]) == 0
        return capsys.readouterr().out

    return cli


# --- The sweep ------------------------------------------------------------------------------------

CSV_ROUTES = ("evaluation:leaderboard_csv", "evaluation:api_leaderboard_csv")
LATEX_ROUTES = ("evaluation:leaderboard_tex", "evaluation:api_leaderboard_latex")
ECHOMIND_CSV = ("evaluation:echomind_leaderboard_csv", "evaluation:api_echomind_leaderboard_csv")
ECHOMIND_LATEX = ("evaluation:echomind_leaderboard_tex", "evaluation:api_echomind_leaderboard_latex")
JSON_ROUTES = (
    "evaluation:api_leaderboard",
    "evaluation:api_echomind_leaderboard",
    "evaluation:api_judge_run_results",
    "evaluation:api_error_propagation",
    "annotation:api_gold",
)
JSON_LINES_ROUTES = (
    "annotation:export_dialogues",
    "annotation:api_dialogue_export",
    "annotation:api_gold_export",
)
ZIP_ROUTES = ("evaluation:echomind_export", "annotation:download_gold_export")
STUDY_ROUTES = (
    "evaluation:study_results_csv",
    "evaluation:api_study_results",
    "evaluation:study_results_json",
)
CROWD_ROUTES = ("evaluation:crowd_payments", "evaluation:crowd_bonuses")
SWEPT = {
    *CROWD_ROUTES,
    *CSV_ROUTES,
    *LATEX_ROUTES,
    *ECHOMIND_CSV,
    *ECHOMIND_LATEX,
    *JSON_ROUTES,
    *JSON_LINES_ROUTES,
    *ZIP_ROUTES,
    *STUDY_ROUTES,
}


def test_every_export_and_the_cli_keep_hostile_text_inert(
    judge: JudgeConfig,
    users: dict[str, User],
    client_for: Callable[[str], Client],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    admin, lead = client_for("admin"), client_for("lead")
    seen: list[str] = []
    single: dict[str, str | int] = {"judge": judge.pk}
    both: dict[str, str | int] = {"judge": judge.pk, "set": "dialogues"}
    for name in CSV_ROUTES:
        for params in (single, both):
            rows = read_csv(body(admin.get(reverse(name), params)).decode(), f"{name} {params}")
            seen += [cell for row in rows for cell in row]
    for name in ECHOMIND_CSV:
        seen += [cell for row in read_csv(body(admin.get(reverse(name))).decode(), name) for cell in row]
    command = io.StringIO()
    call_command("export_leaderboard", JUDGE, stdout=command)
    seen += [cell for row in read_csv(command.getvalue(), "export_leaderboard") for cell in row]
    latex_names = []
    for name in LATEX_ROUTES:
        for params in (single, both):
            latex_names += read_latex(body(admin.get(reverse(name), params)).decode(), f"{name} {params}")
    for name in ECHOMIND_LATEX:
        latex_names += read_latex(body(admin.get(reverse(name))).decode(), name)
    run_id = JudgeRun.objects.get().pk
    for name in JSON_ROUTES:
        client = lead if name.startswith("annotation:") else admin
        url = reverse(name, args=[run_id]) if name.endswith("judge_run_results") else reverse(name)
        for params in (single, both) if name == "evaluation:api_leaderboard" else ({"judge": judge.pk},):
            seen += list(strings(json.loads(body(client.get(url, params)))))
    for name in JSON_LINES_ROUTES:
        client = lead if name == "annotation:api_gold_export" else admin
        seen += read_json_lines(body(client.get(reverse(name))).decode(), name)
    export = transfer_jobs.start_export(started_by=users["lead"])
    run_job(export.pk)
    seen += read_zip(body(lead.get(reverse("annotation:download_gold_export", args=[export.pk]))), "gold")
    seen += read_zip(body(admin.get(reverse("evaluation:echomind_export"))), "echomind")
    response = admin.get(reverse("evaluation:api_leaderboard_csv"), single)
    assert response["X-Judge"].isascii() and "\n" not in response["X-Judge"]

    # Every payload was seen, whole and unchanged (a quote before a formula is all a CSV adds).
    expected = {*SYSTEMS.values(), ECHO_SYSTEM}
    assert expected <= {cell.removeprefix("'") for cell in seen}
    for tag in (
        "topic0",
        "text",
        "instructions",
        "caption",
        "situation",
        "note",
        "reply",
        "rationale",
        "answer",
    ):
        assert any(hostile(tag) in text for text in seen), tag
    assert len(latex_names) == 2 * 3 + 2 * 2 * 3 + 2  # three systems, two per turn (3 turns), one EchoMind

    # The CLI prints every control character escaped, whatever the format.
    cli = _cli(client_for("admin"), monkeypatch)
    for fmt in ("table", "csv", "latex", "json"):
        for argv in (("leaderboard", "--judge", JUDGE), ("echomind-leaderboard",)):
            printed = cli(*argv, "--format", fmt, capsys=capsys)
            bad = [
                c for c in printed if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")
            ]
            assert bad == [], (argv, fmt)
            if fmt == "latex":  # the server's LaTeX holds no control character (a space each)
                read_latex(printed, f"cli {argv} latex")
            else:
                assert "\\u2028" in printed and "\\u001b[2J" in printed
            if fmt == "csv":
                read_csv(printed, f"cli {argv} csv")
    table = cli("leaderboard", "--judge", JUDGE, capsys=capsys)
    # each name whole on its lines: nothing after a break in it went to a line of its own
    named = [line for line in table.splitlines() if re.search(r"(sys[ABC]|judge) =SUM", line)]
    assert len(named) >= 4 and all(line.count("[2J") == 1 for line in named)
    assert not any("[2J" in line for line in table.splitlines() if line not in named)


def test_the_study_results_exports_keep_hostile_names_inert(make_user, users, client_for) -> None:
    from tests.evaluation.studies.support import build_world, from_system, make_study, rate_everything

    world = build_world(make_user, n_systems=2, n_items=2)
    raters = [users["evaluator"], make_user(Role.EVALUATOR, "second")]
    study = make_study(world, raters, users["admin"], training_count=0, trap_count=0)
    for rater in raters:
        rate_everything(study, rater, lambda a, d: 2 if from_system(a.stimulus, "A") else 5)
    names = {"SecretSystemA": hostile("studyA"), "SecretSystemB": hostile("studyB", "=SUM(1;2)", crlf=False)}
    for old, new in names.items():
        System.objects.filter(name=old).update(name=new)
    admin = client_for("admin")

    rows = read_csv(
        body(admin.get(reverse("evaluation:study_results_csv", args=[study.pk]))).decode(), "study"
    )
    document = json.loads(body(admin.get(reverse("evaluation:api_study_results", args=[study.pk]))))

    assert {f"'{name}" for name in names.values()} <= {cell for row in rows for cell in row}
    assert set(names.values()) <= set(strings(document))


@pytest.mark.parametrize("kind", ["ab", "mushra"])
def test_comparison_study_exports_keep_hostile_names_inert(make_user, users, client_for, kind) -> None:
    from tests.evaluation.studies.comparisons.support import answer_everything, make_comparison
    from tests.evaluation.studies.support import build_world

    world = build_world(make_user, n_systems=2, n_items=2)
    raters = [users["evaluator"], make_user(Role.EVALUATOR, "second")]
    study = make_comparison(world, raters, users["admin"], kind, items_per_system=2)
    for rater in raters:
        answer_everything(
            study,
            rater,
            lambda a, slots: {s.position: 90 for s in slots if s.position} if kind == "mushra" else {2: 1},
        )
    names = {"SecretSystemA": hostile("cmpA"), "SecretSystemB": hostile("cmpB", "=SUM(1;2)", crlf=False)}
    for old, new in names.items():
        System.objects.filter(name=old).update(name=new)
    admin = client_for("admin")

    rows = read_csv(body(admin.get(reverse("evaluation:study_results_csv", args=[study.pk]))).decode(), kind)
    for route in ("evaluation:study_results_json", "evaluation:api_study_results"):
        document = json.loads(body(admin.get(reverse(route, args=[study.pk]))))
        assert names["SecretSystemB"] in set(strings(document))
    assert f"'{names['SecretSystemB']}" in {cell for row in rows for cell in row}


def test_the_crowd_payment_sheets_keep_hostile_ids_inert(make_user, users, client_for) -> None:
    from decimal import Decimal

    from django.utils import timezone

    from evaluation.studies.crowd.models import CrowdRater
    from evaluation.studies.crowd.platforms import Platform
    from evaluation.studies.crowd.workflows import open_to_crowd
    from tests.evaluation.studies.support import build_world, make_study

    world = build_world(make_user, n_systems=2, n_items=2)
    study = make_study(world, [users["evaluator"]], users["admin"], training_count=0, trap_count=0)
    link = open_to_crowd(study, 2, Platform.PROLIFIC, bonus=Decimal("1.25"))
    ids = [hostile("crowdA"), hostile("crowdB", "-2+3", crlf=False)]
    now = timezone.now()
    for external_id in ids:
        CrowdRater.objects.create(
            link=link, external_id=external_id[:100], consented_at=now, completed_at=now
        )
    admin = client_for("admin")

    sheet = read_csv(
        body(admin.get(reverse("evaluation:crowd_payments", args=[study.pk]))).decode(), "payments"
    )
    bonuses = read_csv(
        body(admin.get(reverse("evaluation:crowd_bonuses", args=[study.pk]))).decode(), "bonuses"
    )

    assert {f"'{external_id[:100]}" for external_id in ids} <= {row[0] for row in sheet}
    assert [row[1] for row in bonuses] == ["1.25", "1.25"]


# Routes that look like exports (by name or path) but answer no file a program reads back.
NOT_EXPORTS = {
    "annotation:start_gold_export": "POST: queues the export job (its archive is swept above)",
    "evaluation:study_results": "an HTML page (tests/webapp/security/test_xss_sweep.py)",
    "evaluation:leaderboard": "an HTML page",
    "evaluation:measure_audio": "POST: starts a job",
    "evaluation:error_propagation": "an HTML page",
    "evaluation:item_list": "an HTML page",
    "evaluation:item_detail": "an HTML page",
    "evaluation:output_metrics": "an HTML page (each output's measures, filtered and sorted)",
    "evaluation:agreement": "an HTML page",
    "evaluation:judge_audits": "an HTML page",
    "evaluation:judge_audit": "an HTML page",
    "annotation:item_tiers_download": "TextGrid/EAF, not a spreadsheet: hostile labels are swept in "
    "tests/annotation/labelling/test_tier_files.py (test_hostile_labels_stay_inert_text_both_ways)",
    "annotation:tiers_download": "a zip of the same TextGrid/EAF files (swept as above)",
    "ml:builder:export": "POST: writes a training-data version to disk (through webapp.lib.jsonlines)",
}
LOOKS_LIKE_AN_EXPORT = re.compile(r"csv|tsv|tex|latex|export|download|results|jsonl|\.zip|\.json\b")


def test_every_export_route_is_swept_or_exempted_with_a_reason() -> None:
    routes = {
        f"{namespace}{pattern.name}": route for route, pattern, namespace in site_patterns(get_resolver())
    }
    found = {name for name, route in routes.items() if LOOKS_LIKE_AN_EXPORT.search(f"{route} {name}")}
    assert found - SWEPT - set(NOT_EXPORTS) == set(), "sweep these exports or say why they are none"
    assert (SWEPT | set(NOT_EXPORTS)) - set(routes) == set(), "a listed route no longer exists"
