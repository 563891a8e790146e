"""
Keep the site's log readable: quiet polls, one line per refused request.

Live pages poll their fragments every few seconds; ``runserver`` would log
each request and push everything else (the demo's logins) off the screen.
:class:`QuietPolls` drops the request lines of successful polls; anything
else, errors of polls included, is logged as before.

Django logs each suspicious request (a ``Host`` header not in
``ALLOWED_HOSTS``, a field it refuses to look up by) with its traceback and
the submitted value; a misconfigured load balancer floods the log that way.
:class:`OneLine` makes each of them one line naming the kind of refusal.
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


class OneLine(logging.Filter):
    """
    Rewrite a ``django.security.<Kind>`` record as one line without values.

    The record keeps its logger and level; its message becomes the kind of
    refusal, its traceback is dropped, and its arguments (the header or
    parameter as submitted) are never formatted.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        kind = record.name.rpartition(".")[2]
        record.msg = "refused a request: %s"
        record.args = (kind,)
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True
