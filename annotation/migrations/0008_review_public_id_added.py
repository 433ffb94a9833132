# Reviews get a random public id (step 1 of 3: the column, empty for existing rows).

import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0007_gold_override_reason")]

    operations = [
        migrations.AddField(
            model_name="review",
            name="public_id",
            field=models.UUIDField(default=uuid.uuid4, editable=False, null=True),
        ),
    ]
