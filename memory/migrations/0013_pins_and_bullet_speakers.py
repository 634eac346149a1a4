"""Pins on items and bullets, and who said a bullet and when (issue 25)."""

from importlib import import_module

from django.db import migrations, models

# SQLite adds a column to memory_item by rebuilding the table, which drops 0007's trigger: 0008
# recreates it the same way after its own columns.
recreate_sqlite_trigger = import_module(
    "memory.migrations.0008_item_name_occurred_at"
).recreate_sqlite_trigger


class Migration(migrations.Migration):
    dependencies = [("memory", "0012_auth_failure")]

    operations = [
        migrations.AddField(model_name="item", name="pinned", field=models.BooleanField(default=False)),
        migrations.AddField(model_name="bullet", name="pinned", field=models.BooleanField(default=False)),
        migrations.AddField(
            model_name="bullet", name="name", field=models.CharField(blank=True, default="", max_length=64)
        ),
        migrations.AddField(
            model_name="bullet", name="occurred_at", field=models.DateTimeField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="bullet", name="utc_offset", field=models.SmallIntegerField(default=0)
        ),
        migrations.RunPython(recreate_sqlite_trigger, migrations.RunPython.noop),
    ]
