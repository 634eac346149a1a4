# ApiToken, AuditEntry and AuthFailure now belong to accounts (accounts 0001, which takes them over
# with their tables): only memory's state forgets them; the tables and their rows stay.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0013_pins_and_bullet_speakers"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ApiToken"),
                migrations.DeleteModel(name="AuditEntry"),
                migrations.DeleteModel(name="AuthFailure"),
            ]
        )
    ]
