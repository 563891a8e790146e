from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="SignInCount",
            fields=[
                (
                    "key",
                    models.CharField(max_length=80, primary_key=True, serialize=False),
                ),
                ("failures", models.PositiveIntegerField(default=0)),
                ("not_before", models.DateTimeField()),
                ("expires", models.DateTimeField(db_index=True)),
            ],
            options={
                "verbose_name": "sign-in count",
            },
        ),
    ]
