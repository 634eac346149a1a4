"""A job's large input (a /runs/fit's evicted turns), apart from the job row (issue 18)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory", "0010_session_protected_share")]

    operations = [
        migrations.CreateModel(
            name="JobPayload",
            fields=[
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="payload",
                        serialize=False,
                        to="memory.job",
                    ),
                ),
                ("items", models.JSONField(default=list)),
            ],
        ),
    ]
