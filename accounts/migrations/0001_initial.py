# The models ApiToken, AuditEntry and AuthFailure move here from memory with their tables: their
# state is created here and deleted from memory (memory 0014), and nothing happens in the database.
# On a fresh database memory's migrations create the tables, before this one runs.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("memory", "0013_pins_and_bullet_speakers"),
    ]

    state_operations = [
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100)),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("prefix", models.CharField(max_length=12)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"db_table": "memory_apitoken"},
        ),
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ("username", models.CharField(blank=True, default="", max_length=150)),
                ("token_prefix", models.CharField(blank=True, default="", max_length=12)),
                ("channel", models.CharField(max_length=16)),
                ("method", models.CharField(max_length=8)),
                ("path", models.CharField(max_length=500)),
                ("action", models.CharField(max_length=100)),
                ("object_ref", models.CharField(blank=True, default="", max_length=300)),
                ("session_sid", models.CharField(blank=True, db_index=True, default="", max_length=128)),
                ("status", models.PositiveSmallIntegerField()),
                ("outcome", models.CharField(max_length=16)),
                (
                    "user",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "db_table": "memory_auditentry",
                "indexes": [
                    models.Index(fields=["user", "-created_at"], name="memory_audi_user_id_70af1e_idx"),
                    models.Index(
                        fields=["user", "session_sid", "-created_at"], name="memory_audi_user_id_785931_idx"
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="AuthFailure",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("key", models.CharField(max_length=200, unique=True)),
                ("failures", models.PositiveIntegerField(default=0)),
                ("last_failure_at", models.DateTimeField(db_index=True)),
                ("locked_until", models.DateTimeField(blank=True, null=True)),
            ],
            options={"db_table": "memory_authfailure"},
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
