"""An accepted recording goes straight to its annotators."""

from __future__ import annotations

from annotation.labelling.models import Annotation
from annotation.recording.models import Item, Review, Take
from annotation.recording.reviews import submit_verdict
from tests.annotation.recording.support import heard
from tests.factories import stored_wav, tiny_wav
from webapp.roles import Role


def test_three_accepts_assign_the_projects_annotators(make_user, django_capture_on_commit_callbacks) -> None:
    actor = make_user(Role.VOICE_ACTOR)
    reviewers = [make_user(Role.REVIEWER) for _ in range(3)]
    annotators = [make_user(Role.ANNOTATOR) for _ in range(4)]
    item = Item.objects.create(
        external_id="ACC-1",
        text="I finally got the job.",
        scenario="implicit",
        target_emotion="happy",
        actor=actor,
        state=Item.State.IN_REVIEW,
    )
    take = Take.objects.create(
        item=item,
        actor=actor,
        audio_key=(key := stored_wav(tiny_wav())),
        original_key=key,
        status=Take.Status.IN_REVIEW,
    )
    reviews = [Review.objects.create(take=take, reviewer=reviewer) for reviewer in reviewers]
    heard(take)

    with django_capture_on_commit_callbacks(execute=True):
        for review, reviewer in zip(reviews, reviewers, strict=True):
            submit_verdict(review.pk, reviewer, Review.Verdict.ACCEPT)

    assigned = set(Annotation.objects.filter(item=item).values_list("annotator_id", flat=True))
    assert len(assigned) == 3
    assert assigned <= {annotator.pk for annotator in annotators}
