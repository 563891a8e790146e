"""
batchboard's URLs; include them anywhere with ``include("batchboard.urls")``.

The explorer's pages and the console's actions share the ``batchboard``
namespace, so every name reverses as ``batchboard:<name>``.
"""

from __future__ import annotations

from django.urls import include, path

from batchboard.alerts import urls as alerts_urls
from batchboard.api import pages as api_pages
from batchboard.api import urls as api_urls
from batchboard.console import urls as console_urls
from batchboard.explorer import urls as explorer_urls
from batchboard.metrics.views import metrics
from batchboard.personal import urls as personal_urls

app_name = "batchboard"

urlpatterns = [
    *explorer_urls.urlpatterns,
    # Operator actions live beside the pages they act on (same namespace).
    *console_urls.urlpatterns,
    # Prometheus scrapes; an embedding site serves it under its own prefix.
    path("metrics", metrics, name="metrics"),
    # The JSON API in the CLI's envelope (docs/api.md).
    path("api/v1/", include(api_urls.urlpatterns)),
    path("tokens/", api_pages.token_list, name="api_tokens"),
    path("tokens/revoke/", api_pages.token_revoke, name="api_token_revoke"),
    # Alert rules and channels, the inbox and the overdue page.
    *alerts_urls.urlpatterns,
    # Saved views of the lists, and the time-zone choice.
    *personal_urls.urlpatterns,
]
