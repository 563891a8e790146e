"""
batchboard's URLs; include them anywhere with ``include("batchboard.urls")``.

The explorer's pages and the console's actions share the ``batchboard``
namespace, so every name reverses as ``batchboard:<name>``.
"""

from __future__ import annotations

from batchboard.alerts import urls as alerts_urls
from batchboard.console import urls as console_urls
from batchboard.explorer import urls as explorer_urls

app_name = "batchboard"

urlpatterns = [
    *explorer_urls.urlpatterns,
    # Operator actions live beside the pages they act on (same namespace).
    *console_urls.urlpatterns,
    # Alert rules and channels, the inbox and the overdue page.
    *alerts_urls.urlpatterns,
]
