"""
Quiet polls in the development server's log.

Live pages poll their fragments every few seconds; ``runserver`` would log
each request and push everything else (the demo's logins) off the screen.
:class:`QuietPolls` drops the request lines of successful polls; anything
else, errors of polls included, is logged as before.
"""

from __future__ import annotations

import logging
import re
from typing import Final

#: The polled fragments' addresses: live summaries, rows and the panel.
POLLS: Final = re.compile(r'"GET [^" ]*/(?:live|row|attention)/(?:\?[^" ]*)? HTTP')


class QuietPolls(logging.Filter):
    """Drop ``django.server`` lines of poll requests answered 200, 204 or 286."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status not in (200, 204, 286):
            return True
        return POLLS.search(record.getMessage()) is None
