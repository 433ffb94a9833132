from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webapp", "0010_limits_api_token_expiry_scope"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="sends",
            field=models.PositiveIntegerField(
                default=0, help_text="How often its id reached the broker since it was last queued (capped)"
            ),
        ),
    ]
