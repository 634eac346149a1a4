"""Learned window limits belong to the user who taught them (issue 15).

The installation-wide rows have no owner to give them to; they are dropped, and each user's next
overflow teaches the limit again for that user.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def drop_unowned(apps, schema_editor):
    apps.get_model("memory", "LearnedWindow").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0008_item_name_occurred_at"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(drop_unowned, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="learnedwindow",
            name="model",
            field=models.CharField(max_length=200),
        ),
        migrations.AddField(
            model_name="learnedwindow",
            name="user",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="learned_windows",
                to=settings.AUTH_USER_MODEL,
            ),
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name="learnedwindow",
            constraint=models.UniqueConstraint(fields=("user", "model"), name="learned_window_unique_per_user"),
        ),
    ]
