# Reviews get a random public id (step 3 of 3: required and unique).

import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0009_review_public_id_filled")]

    operations = [
        migrations.AlterField(
            model_name="review",
            name="public_id",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
