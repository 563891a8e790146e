"""Fixtures of the security tests: the explorer's readers, small history, site log."""

from __future__ import annotations

import copy
import io
import logging
import logging.config
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.utils.log import configure_logging

from tests.explorer.conftest import History, history, make_user, reader
from tests.site.production import site_settings

__all__ = ["History", "history", "make_user", "reader", "site_log"]


@pytest.fixture
def site_log() -> Iterator[io.StringIO]:
    """Configure the standalone site's LOGGING, every handler writing to one buffer."""
    config = copy.deepcopy(site_settings()["LOGGING"])
    out = io.StringIO()
    for handler in config["handlers"].values():
        handler["stream"] = out
    root = logging.getLogger()
    saved = list(root.handlers)
    logging.config.dictConfig(config)
    # pytest's capturing handlers (caplog) stay on the root logger.
    for handler in saved:
        if handler not in root.handlers:
            root.addHandler(handler)
    try:
        yield out
    finally:
        configure_logging(settings.LOGGING_CONFIG, settings.LOGGING)
        for handler in saved:
            if handler not in root.handlers:
                root.addHandler(handler)
