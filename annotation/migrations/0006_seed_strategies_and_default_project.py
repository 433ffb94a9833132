"""Seed the emotional-support strategy taxonomy and the default annotation project.

The strategies are copied from annotation.label_schema.DEFAULT_STRATEGIES as they were when this
migration was written: a migration must keep doing the same thing when the code changes later.
"""

from django.db import migrations

STRATEGIES = (
    ("emotional-validation", "Emotional validation", "Acknowledge the feeling as understandable and legitimate."),
    ("reassurance", "Reassurance", "Offer comfort and confidence that things can be managed."),
    ("reflection-of-feelings", "Reflection of feelings", "Name the feelings heard, in the listener's own words."),
    ("questioning", "Questioning", "Ask open questions to understand the situation better."),
    ("restatement", "Restatement", "Paraphrase what was said to show it was understood."),
    ("self-disclosure", "Self-disclosure", "Share a similar experience to build connection."),
    ("information", "Information", "Give facts or resources that help."),
    ("suggestions-guidance", "Suggestions / guidance", "Propose concrete next steps."),
    ("cognitive-reframing", "Cognitive reframing", "Offer another, more balanced way to see the situation."),
)
DEFAULT_PROJECT = "EchoEval"


def seed(apps, schema_editor):
    Strategy = apps.get_model("annotation", "Strategy")
    AnnotationProject = apps.get_model("annotation", "AnnotationProject")
    for position, (slug, name, description) in enumerate(STRATEGIES, start=1):
        Strategy.objects.get_or_create(
            slug=slug, defaults={"name": name, "description": description, "position": position * 10}
        )
    AnnotationProject.objects.get_or_create(
        name=DEFAULT_PROJECT,
        defaults={
            "description": "Every EchoEval item: three independent annotators, as in the paper (appendix C.2).",
            "annotators_per_item": 3,
        },
    )


def unseed(apps, schema_editor):
    # Labels refer to strategies by slug, not by foreign key, so removing the rows orphans nothing.
    apps.get_model("annotation", "Strategy").objects.filter(slug__in=[slug for slug, _, _ in STRATEGIES]).delete()
    apps.get_model("annotation", "AnnotationProject").objects.filter(name=DEFAULT_PROJECT).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0005_annotation_projects_and_gold_provenance"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
