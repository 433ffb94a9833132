"""Label Studio's people and annotations, made through its own ORM; run by Label Studio's Python.

    ls-venv/bin/python bench/labelstudio_seed.py setup
    ls-venv/bin/python bench/labelstudio_seed.py annotate <project id> <labelled tasks> <per task>

bench/labelstudio_side.py runs this with Label Studio's settings in the environment; it imports
nothing of EchoStudio's. Each command prints one JSON object on its last line. Items are not made
here: they go in through Label Studio's import API (timed, as EchoStudio's import page is).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import label_studio

sys.path.insert(0, str(Path(label_studio.__file__).parent))  # Label Studio imports `core`, `projects`, ...
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings.label_studio")

import django

django.setup()

from django.conf import settings
from django.test import Client
from organizations.models import Organization
from projects.models import Project
from tasks.models import Annotation, Task
from users.models import User

ANNOTATORS = 30
PASSWORD = "bench-password-1"
CHOICES = {
    "polarity": ("positive", "negative", "neutral"),
    "emotion": ("happy", "sad", "angry", "surprise", "disgust", "fear", "neutral"),
    "intensity": ("low", "medium", "high"),
    "pitch": ("low", "normal", "high"),
    "energy": ("low", "normal", "high"),
    "rate": ("low", "normal", "high"),
    "intonation": ("rising", "falling", "flat"),
}
TEXTS = ("prosody_caption", "situation", "context", "latent_need", "core_demand")


def label_config() -> str:
    """Return a labelling config with the perception form's choices and texts over the item's text."""
    parts = ["<View>", '<Text name="text" value="$text"/>']
    for name, values in CHOICES.items():
        options = "".join(f'<Choice value="{value}"/>' for value in values)
        parts.append(f'<Choices name="{name}" toName="text" choice="single">{options}</Choices>')
    parts += [f'<TextArea name="{name}" toName="text" maxSubmissions="1"/>' for name in TEXTS]
    parts.append("</View>")
    return "".join(parts)


def result(n: int) -> list[dict[str, object]]:
    """Return an annotation's result: one choice of each kind and each text, as the editor sends them."""
    picked = [
        {
            "from_name": name,
            "to_name": "text",
            "type": "choices",
            "value": {"choices": [values[n % len(values)]]},
        }
        for name, values in CHOICES.items()
    ]
    texts = [
        {"from_name": name, "to_name": "text", "type": "textarea", "value": {"text": [f"{name} {n}"]}}
        for name in TEXTS
    ]
    return [{"id": f"r{k}", **region} for k, region in enumerate(picked + texts)]


def session_cookie(user: User) -> str:
    """Return a signed-in session, stamped with its login time: Label Studio's inactivity middleware
    signs out a session without one (its login view stamps it)."""
    client = Client()
    client.force_login(user)
    session = client.session
    session["last_login"] = time.time()
    session.save()
    return str(session.session_key)


def setup() -> dict[str, object]:
    admin = User.objects.create_user(
        email="bench-admin@example.com", password=PASSWORD, username="bench-admin"
    )
    organization = Organization.create_organization(created_by=admin, title="bench")
    admin.active_organization = organization
    admin.save(update_fields=["active_organization"])
    annotators = []
    for n in range(ANNOTATORS):
        user = User.objects.create_user(
            email=f"bench-annotator-{n}@example.com", password=PASSWORD, username=f"bench-annotator-{n}"
        )
        organization.add_user(user)
        user.active_organization = organization
        user.save(update_fields=["active_organization"])
        annotators.append(user)
    project = Project.objects.create(
        title="bench", label_config=label_config(), created_by=admin, organization=organization
    )
    return {
        "project": project.pk,
        "cookie_name": settings.SESSION_COOKIE_NAME,
        "sessions": {"admin": session_cookie(admin), "annotator": session_cookie(annotators[0])},
        "result": result(1),
    }


def annotate(project_id: int, labelled: int, per_task: int) -> dict[str, object]:
    """Annotate the first `labelled` tasks `per_task` times each (annotators in turn), then set the
    tasks' counters as Label Studio's own import does after bulk writes."""
    project = Project.objects.get(pk=project_id)
    annotators = list(User.objects.filter(username__startswith="bench-annotator-").order_by("pk"))
    tasks = list(Task.objects.filter(project=project).order_by("pk")[:labelled])
    Annotation.objects.bulk_create(
        (
            Annotation(
                task=task,
                project=project,
                completed_by=annotators[(index * per_task + k) % len(annotators)],
                result=result(index + k),
                lead_time=12.5,
            )
            for index, task in enumerate(tasks)
            for k in range(per_task)
        ),
        batch_size=5000,
    )
    project.update_tasks_counters_and_is_labeled(
        Task.objects.filter(project=project, pk__in=[t.pk for t in tasks])
    )
    annotator = annotators[0]
    return {
        "annotations": Annotation.objects.filter(project=project).count(),
        "tasks": Task.objects.filter(project=project).count(),
        "annotation": Annotation.objects.filter(project=project, completed_by=annotator)
        .order_by("pk")
        .first()
        .pk,
        "labelled_task": tasks[len(tasks) // 2].pk,
        "open_tasks": list(
            Task.objects.filter(project=project, total_annotations=0)
            .order_by("-pk")
            .values_list("pk", flat=True)[:400]
        ),
    }


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    if command == "setup":
        print(json.dumps(setup()))
    elif command == "annotate":
        print(json.dumps(annotate(*(int(argument) for argument in arguments))))
    else:
        raise SystemExit(f"unknown command {command}")
