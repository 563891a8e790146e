from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BatchboardSiteConfig(AppConfig):
    """
    The standalone site's own table: the sign-in throttle's counts.

    Only the standalone site installs it; its table lives in Django's
    database (``DATABASE_URL``), beside the users and sessions.
    """

    name = "batchboard.site"
    label = "batchboard_site"
    verbose_name = _("batchboard site")
    default_auto_field = "django.db.models.BigAutoField"
