"""EchoMind's data: the vocal-attribute taxonomy, delivery sets (one neutral script, its target,
neutral and alternative deliveries, each recorded as an Item), multiple-choice questions on
deliveries, and systems' answers, transcripts and spoken replies."""

from __future__ import annotations

from django.conf import settings
from django.db import models, transaction

from annotation.recording.models import Item, Take
from evaluation.echomind import scoring, taxonomy
from evaluation.echomind.choices import read_choice
from evaluation.outputs.models import System
from webapp.models import Archivable, ArchivableQuerySet


class VocalAttribute(models.Model):
    """One vocal attribute of the taxonomy (EchoMind's 45 are the default; edit or import more)."""

    class Coarse(models.TextChoices):
        SPEAKER = taxonomy.SPEAKER, "Speaker"
        PARALINGUISTIC = taxonomy.PARALINGUISTIC, "Paralinguistic"
        ENVIRONMENT = taxonomy.ENVIRONMENT, "Environment"

    code = models.CharField(max_length=48, unique=True)
    label = models.CharField(max_length=100)
    coarse = models.CharField(max_length=16, choices=Coarse.choices)
    fine = models.CharField(max_length=60, help_text="Fine dimension, e.g. emotion, weather")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "code"]

    def __str__(self) -> str:
        return self.label


class DeliverySet(models.Model):
    """One EchoMind case: a semantically neutral script recorded in several deliveries."""

    case_id = models.CharField(max_length=40, unique=True, help_text="e.g. id_12")
    script_type = models.CharField(max_length=40, help_text="The <type> of script_info_<type>.json")
    topic = models.CharField(max_length=100, blank=True)
    text = models.TextField(help_text="The neutral script every delivery speaks")
    attribute = models.ForeignKey(VocalAttribute, on_delete=models.PROTECT, related_name="delivery_sets")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["case_id"]

    def __str__(self) -> str:
        return self.case_id


class Delivery(models.Model):
    """One delivery of a case: an Item an actor records with the attribute as the instruction."""

    class Role(models.TextChoices):
        TARGET = scoring.TARGET, "Target"
        NEUTRAL = scoring.NEUTRAL, "Neutral"
        ALTERNATIVE = scoring.ALTERNATIVE, "Alternative"

    delivery_set = models.ForeignKey(DeliverySet, on_delete=models.CASCADE, related_name="deliveries")
    role = models.CharField(max_length=12, choices=Role.choices)
    attribute = models.ForeignKey(
        VocalAttribute, null=True, blank=True, on_delete=models.PROTECT, help_text="None for the neutral one"
    )
    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="echomind_delivery")
    audio_file = models.CharField(max_length=200, blank=True, help_text="Name in the released layout")
    reference_replies = models.JSONField(default=list, blank=True)
    # An environment delivery may be the accepted neutral take mixed with a background clip.
    mixed_from = models.ForeignKey(Take, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    background = models.CharField(
        max_length=200, blank=True, help_text="Name of the background clip mixed in"
    )
    background_gain_db = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["delivery_set", "role"]
        constraints = [models.UniqueConstraint(fields=["delivery_set", "role"], name="one_delivery_per_role")]

    def __str__(self) -> str:
        return f"{self.delivery_set_id}:{self.role}"

    def audio_name(self) -> str:
        """Return the released layout's file name: as imported, else id_<n>_<attribute>_<topic>_<role>.wav."""
        if self.audio_file:
            return self.audio_file
        case = self.delivery_set
        number = case.case_id.removeprefix("id_")
        topic = "_".join(case.topic.split()) or "none"
        return f"id_{number}_{case.attribute.code}_{topic}_{self.role}.wav"


class DeliveryImport(models.Model):
    """One upload in EchoMind's released layout and what became of each of its files (`report`,
    as `transfer.LayoutReport.as_dict` writes it): the scope of the question ids it brought."""

    created_at = models.DateTimeField(auto_now_add=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    name = models.CharField(max_length=200, blank=True, help_text="What was uploaded, e.g. the zip's name")
    report = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"import {self.pk}" + (f" ({self.name})" if self.name else "")


class Question(Archivable):
    """A multiple-choice question about one delivery (levels 1 and 2).

    Removing one archives it (`webapp.archive`): the systems' answers to it stay, out of every
    score and export until it is restored. It is what answers hang from, not work itself, so it
    may be deleted in the admin only while no answer protects it (like an item).

    Its id is unique within the import that brought it (`source`; none for a question written
    on the questions page, unique among those): two releases may both say "u1" and each keeps
    its own question and answers.
    """

    class Level(models.TextChoices):
        UNDERSTANDING = scoring.UNDERSTANDING, "Understanding"
        REASONING = scoring.REASONING, "Reasoning"

    question_id = models.CharField(max_length=60)
    source = models.ForeignKey(
        DeliveryImport,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="questions",
        help_text="The import that brought it; none when written here",
    )
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="questions")
    level = models.CharField(max_length=16, choices=Level.choices)
    question_type = models.CharField(max_length=60, help_text="e.g. emotion, speaker intent")
    text = models.TextField()
    options = models.JSONField(help_text="Option texts, lettered A, B, C ... in order")
    answer = models.CharField(max_length=1, help_text="The key: the correct option's letter")

    work_product = False
    objects = ArchivableQuerySet["Question"].as_manager()

    class Meta:
        ordering = ["question_id", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["source", "question_id"], name="question_id_per_import"),
            models.UniqueConstraint(
                fields=["question_id"],
                condition=models.Q(source__isnull=True),
                name="question_id_written_here",
            ),
        ]

    def __str__(self) -> str:
        return self.question_id

    def reread_answers(self) -> int:
        """Read every system's answer again against the current options (after an edit); return how many changed."""
        changed = 0
        for answer in self.answers.in_use():
            reading = read_choice(answer.raw_text, self.options)
            if (answer.letter, answer.pattern) != (reading.letter or "", reading.pattern):
                answer.letter, answer.pattern = reading.letter or "", reading.pattern
                answer.save(update_fields=["letter", "pattern"])
                changed += 1
        return changed


class Answer(Archivable):
    """A system's answer to a question: its text as given and the letter read from it (or none).
    A re-import archives the answer it replaces; scores read `in_use("question")`."""

    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="echomind_answers")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="answers")
    raw_text = models.TextField()
    letter = models.CharField(
        max_length=1, blank=True, help_text="Blank: unparseable (counted, never guessed)"
    )
    pattern = models.CharField(
        max_length=40, help_text="The documented pattern that read it, or why none did"
    )
    imported_at = models.DateTimeField(auto_now=True)

    objects = ArchivableQuerySet["Answer"].as_manager()

    class Meta:
        constraints = [
            # Archived answers (replaced by a re-import) stay beside the one in use.
            models.UniqueConstraint(
                fields=["system", "question"],
                condition=models.Q(archived_at__isnull=True),
                name="one_answer_per_question",
            )
        ]

    def __str__(self) -> str:
        return f"{self.system_id}:{self.question_id} {self.letter or '?'}"


class Transcript(Archivable):
    """A system's transcription of a delivery (level 1 content, scored by WER)."""

    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="echomind_transcripts")
    delivery = models.ForeignKey(Delivery, on_delete=models.PROTECT, related_name="transcripts")
    text = models.TextField(blank=True)

    objects = ArchivableQuerySet["Transcript"].as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["system", "delivery"],
                condition=models.Q(archived_at__isnull=True),
                name="one_transcript_per_delivery",
            )
        ]

    def __str__(self) -> str:
        return f"{self.system_id}:{self.delivery_id}"


class ReplyQuerySet(ArchivableQuerySet["Reply"]):
    def add_scores(self, reply_id: int, scores: dict[str, float]) -> bool:
        """Merge scores into a reply's; return False when the reply is archived (re-imported meanwhile)."""
        # Race: the judge job and the audio-quality job write the same JSON field; each locks the
        # row and merges into what it holds now, so neither overwrites the other's scores.
        with transaction.atomic():
            reply = self.in_use().select_for_update().filter(pk=reply_id).first()
            if reply is None:
                return False
            reply.scores = {**reply.scores, **scores}
            reply.save(update_fields=["scores"])
            return True


class Reply(Archivable):
    """A system's one-turn spoken reply to a delivery under a prompt strength (level 3). A re-import
    archives the reply it replaces, audio kept (a study may still play it)."""

    class Prompt(models.TextChoices):
        NONE = "none", "None"
        BASIC = "basic", "Basic"
        ENHANCED = "enhanced", "Enhanced"

    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="echomind_replies")
    delivery = models.ForeignKey(Delivery, on_delete=models.PROTECT, related_name="replies")
    prompt = models.CharField(max_length=10, choices=Prompt.choices, default=Prompt.NONE)
    text = models.TextField(blank=True)
    audio_key = models.CharField(max_length=200, blank=True)
    audio_seconds = models.FloatField(
        null=True, blank=True, help_text="The reply audio's length, when it has audio"
    )
    # By metric key (c1-c4, ves, bleu4, rouge_l, dnsmos ...): a metric absent is "not computed".
    scores = models.JSONField(default=dict, blank=True)

    objects = ReplyQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["system", "delivery", "prompt"],
                condition=models.Q(archived_at__isnull=True),
                name="one_reply_per_prompt",
            )
        ]

    def __str__(self) -> str:
        return f"{self.system_id}:{self.delivery_id}:{self.prompt}"
