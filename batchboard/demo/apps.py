from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BatchboardDemoConfig(AppConfig):
    """
    The demo: invented history, the simulator, demo logins and benchmarks.

    Only the standalone site installs it. A site that embeds batchboard
    lists ``batchboard`` alone and so gets none of these commands.
    """

    name = "batchboard.demo"
    label = "batchboard_demo"
    verbose_name = _("batchboard demo")
