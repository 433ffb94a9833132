"""The role groups' Django permissions go: no view ever checked them (webapp.roles checks roles)."""

from django.db import migrations

DROPPED = ("record_takes", "review_takes", "annotate_items", "adjudicate_items", "rate_outputs", "manage_studio")


def delete_permissions(apps, schema_editor):
    # Django keeps stale Permission rows; left, the admin would still offer them for groups.
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(content_type__app_label="webapp", codename__in=DROPPED).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("webapp", "0008_job_provenance"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="user",
            options={"verbose_name": "user", "verbose_name_plural": "users"},
        ),
        migrations.RunPython(delete_permissions, migrations.RunPython.noop),
    ]
