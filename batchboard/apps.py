from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BatchboardConfig(AppConfig):
    name = "batchboard"
    verbose_name = _("batchboard")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from batchboard import checks, signals  # noqa: F401
