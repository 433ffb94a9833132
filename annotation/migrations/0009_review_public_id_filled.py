# Reviews get a random public id (step 2 of 3: one fresh id per existing review; nothing removed).
# Every row: step 1 gave all existing rows the one default value it computed.

import uuid
from typing import Any

from django.db import migrations


def fill_public_ids(apps: Any, schema_editor: Any) -> None:
    Review = apps.get_model("annotation", "Review")
    for review in Review.objects.only("pk").iterator():
        Review.objects.filter(pk=review.pk).update(public_id=uuid.uuid4())


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_review_public_id_added")]

    operations = [migrations.RunPython(fill_public_ids, migrations.RunPython.noop)]
