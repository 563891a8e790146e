"""Fixtures of the security tests: the explorer's readers, small history, site log."""

from __future__ import annotations

import copy
import io
import logging
import logging.config
from collections.abc import Iterator

import pytest

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
    # Every logger the site configures, and the root, as they were.
    loggers = [logging.getLogger(), *map(logging.getLogger, config["loggers"])]
    saved = [
        (logger, list(logger.handlers), logger.level, logger.propagate)
        for logger in loggers
    ]
    disabled = {
        name: logger.disabled
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    logging.config.dictConfig(config)
    # pytest's capturing handlers (caplog) stay on the root logger.
    root = logging.getLogger()
    for handler in saved[0][1]:
        if handler not in root.handlers:
            root.addHandler(handler)
    try:
        yield out
    finally:
        for logger, handlers, level, propagate in saved:
            logger.handlers = handlers
            logger.setLevel(level)
            logger.propagate = propagate
        for name, was in disabled.items():
            found = logging.Logger.manager.loggerDict.get(name)
            if isinstance(found, logging.Logger):
                found.disabled = was
