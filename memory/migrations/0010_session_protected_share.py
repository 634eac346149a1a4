"""A session's own share of Y for a person's verbatim turns (issue 15); NULL: OTTO_PROTECTED_SHARE."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory", "0009_learned_window_per_user")]

    operations = [
        migrations.AddField(
            model_name="session",
            name="protected_share",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
