from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("batchboard", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="jobexecution",
            options={
                "managed": False,
                "permissions": [
                    ("operate_lifecycle", "Can use Lifecycle operator actions (stop)"),
                    (
                        "operate_destructive",
                        "Can use Destructive operator actions "
                        "(abandon, recover, hold, release, purge)",
                    ),
                ],
                "verbose_name": "job execution",
            },
        ),
    ]
