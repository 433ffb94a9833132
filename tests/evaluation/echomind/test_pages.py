"""EchoMind pages and API: admins only, the taxonomy import, exports, and the environment mix."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.audio.joining import read_wav
from annotation.recording.models import Take
from evaluation.echomind import reports
from evaluation.echomind.answers import import_answers
from evaluation.echomind.deliveries import (
    DeliveryProblem,
    create_delivery_set,
    ensure_default_taxonomy,
    mix_background,
    mix_environment_delivery,
)
from evaluation.echomind.models import Delivery, VocalAttribute
from evaluation.echomind.transfer import import_layout
from tests.evaluation.echomind.fixture import echomind_files, environment_case, record_neutral
from tests.factories import SystemFactory, tiny_wav
from webapp.models import User

pytestmark = pytest.mark.django_db


def test_the_pages_are_for_admins(client_for: Callable[[str], Client]) -> None:
    assert client_for("evaluator").get("/echomind/leaderboard/").status_code == 403
    admin = client_for("admin")
    for path in ("/echomind/", "/echomind/taxonomy/", "/echomind/leaderboard/"):
        assert admin.get(path).status_code == 200, path
    assert "Sea waves" in admin.get("/echomind/taxonomy/").content.decode()


def test_a_taxonomy_file_adds_and_updates_attributes_and_a_bad_one_changes_nothing(
    client_for: Callable[[str], Client],
) -> None:
    admin = client_for("admin")
    ensure_default_taxonomy()
    lines = [
        {"code": "purring", "label": "Purring", "coarse": "environment", "fine": "animals"},
        {"code": "sigh", "label": "Deep sigh", "coarse": "paralinguistic", "fine": "non-verbal expression"},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    admin.post("/echomind/taxonomy/", {"taxonomy": SimpleUploadedFile("t.jsonl", data)})
    assert VocalAttribute.objects.count() == 46
    assert VocalAttribute.objects.get(code="sigh").label == "Deep sigh"
    admin.post("/echomind/taxonomy/", {"taxonomy": SimpleUploadedFile("t.jsonl", b'{"code": "x"}\n')})
    assert VocalAttribute.objects.count() == 46


def test_leaderboard_csv_latex_api_and_export_carry_the_same_numbers(
    client_for: Callable[[str], Client], users: dict[str, User], media_root: Path
) -> None:
    import_layout(echomind_files(), users["admin"])
    system = SystemFactory.create(name="Parrot")
    import_answers(
        system,
        b'{"question_id": "u1", "answer": "The answer is: [B]"}\n{"question_id": "u2", "answer": "?"}\n',
    )
    admin = client_for("admin")
    csv_text = admin.get("/echomind/leaderboard.csv").content.decode()
    assert csv_text.splitlines()[1].startswith("Parrot,50.0,")
    # n/N: 2 of the 3 understanding questions answered, on the page, in CSV, LaTeX and the API
    assert next(csv.DictReader(io.StringIO(csv_text)))["Understanding acc. (%) n/N"] == "2/3"
    latex = admin.get("/echomind/leaderboard.tex").content.decode()
    assert r"Parrot & 50.0$^{\dagger}$" in latex and "Parrot Understanding acc. (\\%) 2/3" in latex
    page = admin.get("/echomind/leaderboard/").content.decode()
    assert '50.0<span class="coverage" data-testid="coverage">2/3</span>' in page
    body = admin.get("/api/echomind/leaderboard/").json()
    assert body["rows"][0]["understanding"] == {
        "correct": 1, "asked": 2, "unparsed": 1, "rate": 0.5, "expected": 3,
        "low": pytest.approx(0.0945, abs=1e-3), "high": pytest.approx(0.9055, abs=1e-3),
    }  # fmt: skip
    assert admin.get("/api/echomind/leaderboard/csv/").content.decode() == csv_text
    names = zipfile.ZipFile(io.BytesIO(admin.get("/echomind/export.zip").content)).namelist()
    assert "script_info_speaker.json" in names and "answers/Parrot.jsonl" in names


def test_an_environment_delivery_is_the_accepted_neutral_take_with_background_mixed_in(
    media_root: Path, users: dict[str, User]
) -> None:
    target = environment_case()
    with pytest.raises(DeliveryProblem, match="no accepted take"):
        mix_environment_delivery(target, tiny_wav(1.0, 90.0), "rain.wav", -10.0)
    recording = record_neutral(target, users["actor"])
    take = mix_environment_delivery(target, tiny_wav(1.0, 90.0), "rain.wav", -10.0)
    assert (take.item_id, take.actor_id, take.status) == (
        target.item_id,
        users["actor"].pk,
        Take.Status.ANALYSING,
    )
    target.refresh_from_db()
    assert (target.mixed_from_id, target.background, target.background_gain_db) == (
        recording.pk,
        "rain.wav",
        -10.0,
    )
    assert take.duration_seconds == pytest.approx(1.5, abs=0.05)  # the speech's length, not the clip's


def test_the_sets_page_mixes_an_environment_delivery_for_admins_only(
    media_root: Path, users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    target = environment_case()
    record_neutral(target, users["actor"])
    admin = client_for("admin")

    # the page offers the environment deliveries still to be made, not the neutral one
    page = admin.get("/echomind/").content.decode()
    assert 'data-testid="mix-form"' in page
    assert f'value="{target.pk}"' in page
    neutral = target.delivery_set.deliveries.get(role=Delivery.Role.NEUTRAL)
    assert f'<option value="{neutral.pk}"' not in page

    def mix(client: Client, clip: bytes, gain: str = "-12") -> str:
        upload = SimpleUploadedFile("rain.wav", clip, content_type="audio/wav")
        answer = client.post(
            "/echomind/mix/", {"delivery": target.pk, "background": upload, "gain_db": gain}, follow=True
        )
        return answer.content.decode() if answer.status_code == 200 else str(answer.status_code)

    # others may not mix, and what they send makes no take
    for role in ("actor", "reviewer", "annotator", "evaluator"):
        assert mix(client_for(role), tiny_wav(1.0, 90.0)) == "403"
    # a clip that is not audio, or a gain out of range, is refused in words and makes no take
    assert "Not mixed: This file is not audio we can read" in mix(admin, b"RIFF not really")
    assert "between -60 and 20" in mix(admin, tiny_wav(1.0, 90.0), gain="loud")
    assert not Take.objects.filter(item_id=target.item_id).exists()

    # the admin's mix is a take of the target delivery, in the actor's name, on its way to review
    assert "mixed with rain.wav at -12 dB" in mix(admin, tiny_wav(1.0, 90.0))
    take = Take.objects.get(item_id=target.item_id)
    assert (take.actor_id, take.status) == (users["actor"].pk, Take.Status.ANALYSING)
    target.refresh_from_db()
    assert (target.background, target.background_gain_db) == ("rain.wav", -12.0)


def test_mixing_adds_the_background_at_the_chosen_gain() -> None:
    silence = read_wav(tiny_wav(1.0, 0.0))
    quiet = np.array(
        read_wav(mix_background(tiny_wav(1.0, 0.0), tiny_wav(0.3, 200.0), -20.0)).get_array_of_samples()
    )
    loud = np.array(
        read_wav(mix_background(tiny_wav(1.0, 0.0), tiny_wav(0.3, 200.0), 0.0)).get_array_of_samples()
    )
    assert len(silence) == 1000
    # Over silence the mix is the looped clip itself: -20 dB is a tenth of the amplitude.
    assert np.abs(loud).max() == pytest.approx(8000, rel=0.01)
    assert np.abs(quiet).max() == pytest.approx(800, rel=0.02)


def test_a_delivery_set_refuses_an_alternative_of_another_dimension() -> None:
    ensure_default_taxonomy()
    with pytest.raises(DeliveryProblem, match="another attribute of emotion"):
        create_delivery_set(
            case_id="id_8", script_type="p", topic="", text="x", attribute="sad_tone", alternative="rain"
        )


def test_c1_to_c4_and_ves_come_from_a_judge_endpoint_once_then_from_the_cache(
    media_root: Path, users: dict[str, User]
) -> None:
    from evaluation.echomind.answers import judge_replies
    from evaluation.echomind.models import Reply
    from tests.factories import JudgeConfigFactory
    from tests.support.fake_chat_server import json_reply, running_chat_server

    import_layout(echomind_files(with_audio=False), users["admin"])
    system = SystemFactory.create(name="Parrot")
    target = Delivery.objects.get(delivery_set__case_id="id_1", role="target")
    neutral = Delivery.objects.get(delivery_set__case_id="id_1", role="neutral")
    rows = [
        {"delivery": target.audio_name(), "response": "I'm sorry, that sounds hard."},
        {"delivery": neutral.audio_name(), "response": "Okay, noted."},
    ]
    import_answers(system, "\n".join(json.dumps(row) for row in rows).encode())
    good = {"c1": 4, "c2": 5, "c3": 4, "c4": 5, "ves": 4, "c1_reason": "fits"}
    with running_chat_server([json_reply(good), json_reply({"c1": 9})]) as server:
        judge = JudgeConfigFactory.create(base_url=server.base_url)
        assert judge_replies(judge) == (1, 1)  # the out-of-range answer is an error, not a score
        scores = {r.delivery.role: r.scores for r in Reply.objects.select_related("delivery")}
        assert sorted(s.get("c4") for s in scores.values() if "c4" in s) == [5.0]
        assert len(server.chat_requests) == 2
    board_row = reports.board()[0]
    assert board_row.replies["c1"] == 4.0 and board_row.replies["dnsmos"] is None


def test_judging_replies_is_queued_as_a_job_for_a_real_judge_only(
    client_for: Callable[[str], Client],
) -> None:
    from tests.factories import JudgeConfigFactory
    from webapp.models import Job

    admin = client_for("admin")
    heuristic = JudgeConfigFactory.create(offline_heuristic=True)
    assert admin.post("/echomind/judge/", {"judge": heuristic.pk}).status_code == 404
    real = JudgeConfigFactory.create()
    response = admin.post("/echomind/judge/", {"judge": real.pk})
    job = Job.objects.get(kind="echomind_judge_replies")
    assert response.status_code == 302 and job.parameters == {"judge": real.pk}
