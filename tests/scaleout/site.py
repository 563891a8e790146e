"""The standalone site served in a subprocess, and a small browser for it."""

from __future__ import annotations

import http.cookiejar
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.scaleout.cluster import free_port
from tests.site.commands import CHECKOUT, SITE_VARIABLES, Result, manage

SETTINGS = "tests.scaleout.site_settings"


def site_env(**variables: str) -> dict[str, str]:
    """The site's variables for a local trial on the cluster."""
    return {
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "DJANGO_DEBUG": "1",
        "SECRET_KEY": "scale-out-tests",
        "BATCHBOARD_SCHEMA": "managed",
        **variables,
    }


def run_manage(*args: str, env: dict[str, str], timeout: float = 300) -> Result:
    result = manage(*args, env=env, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.output}")
    return result


@dataclass
class Site:
    """One web worker (``runserver``) of the standalone site."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def serve(env: dict[str, str], log: Path) -> Site:
    """Start a web worker with ``env`` and wait until it answers."""
    port = free_port()
    base = {k: v for k, v in os.environ.items() if k not in SITE_VARIABLES}
    handle = log.open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            str(CHECKOUT / "manage.py"),
            "runserver",
            f"127.0.0.1:{port}",
            "--noreload",
        ],
        cwd=CHECKOUT,
        env={**base, "PYTHONDONTWRITEBYTECODE": "1", **env},
        stdout=handle,
        stderr=subprocess.STDOUT,
    )
    site = Site(process, port, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the site did not start:\n{site.output()}")
        try:
            urllib.request.urlopen(f"{site.base}/login/", timeout=2).read()
            return site
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    site.stop()
    raise RuntimeError(f"the site did not answer:\n{site.output()}")


@contextmanager
def serving(
    env: dict[str, str], tmp_path_factory: pytest.TempPathFactory, name: str
) -> Iterator[Site]:
    """Serve a web worker with ``env`` (its log in a folder ``name``), then stop it."""
    worker = serve(env, Path(tmp_path_factory.mktemp(name)) / "site.log")
    try:
        yield worker
    finally:
        worker.stop()


class _Forms(HTMLParser):
    """Collect each POST form's action and the values it would submit."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, list[tuple[str, str]]]] = []
        self._select: str | None = None
        self._chosen = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {key: value or "" for key, value in attrs}
        if tag == "form":
            if found.get("method", "").lower() == "post":
                self.forms.append((found.get("action", ""), []))
            else:
                self.forms.append(("", []))
            return
        if not self.forms:
            return
        fields = self.forms[-1][1]
        if tag == "input" and "name" in found:
            kind = found.get("type", "text").lower()
            if kind in ("checkbox", "radio") and "checked" not in found:
                return
            fields.append((found["name"], found.get("value", "")))
        elif tag == "select" and "name" in found:
            self._select, self._chosen = found["name"], False
        elif tag == "option" and self._select is not None:
            value = found.get("value", "")
            if value and ("selected" in found or not self._chosen):
                fields[:] = [f for f in fields if f[0] != self._select]
                fields.append((self._select, value))
                self._chosen = self._chosen or "selected" in found or bool(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None


class Browser:
    """A signed-in user's cookies, over plain HTTP, without JavaScript."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar)
        )

    def request(
        self, path: str, data: list[tuple[str, str]] | None = None
    ) -> tuple[int, str]:
        url = path if path.startswith("http") else self.base + path
        body = None if data is None else urllib.parse.urlencode(data).encode()
        headers = {"Referer": url}
        try:
            with self.opener.open(
                urllib.request.Request(url, data=body, headers=headers), timeout=30
            ) as response:
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode(errors="replace")

    def get(self, path: str) -> tuple[int, str]:
        return self.request(path)

    def csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken" and c.value)

    def login(self, user: str) -> None:
        self.get("/login/")
        status, page = self.request(
            "/login/",
            [
                ("csrfmiddlewaretoken", self.csrf()),
                ("username", user),
                ("password", user),
                ("next", "/"),
            ],
        )
        assert status == 200 and "Log out" in page, (status, page[:500])

    def post_form(
        self, page: str, overrides: dict[str, str] | None = None, index: int = -1
    ) -> tuple[int, str]:
        """Submit the ``index``-th POST form of ``page`` with its own values."""
        parser = _Forms()
        parser.feed(page)
        forms = [form for form in parser.forms if form[0]]
        action, fields = forms[index]
        values = dict(fields)
        values.update(overrides or {})
        merged = [(k, v) for k, v in fields if k not in (overrides or {})]
        merged += [(k, v) for k, v in (overrides or {}).items()]
        assert values
        return self.request(action, merged)

    def act(self, dialog_path: str, overrides: dict[str, str] | None = None) -> str:
        """Open an action's dialog page and confirm it; return the result page."""
        status, page = self.get(dialog_path)
        assert status == 200, (status, page[:500])
        status, result = self.post_form(page, overrides)
        assert status == 200, (status, result[:800])
        return result


def applied(result: str) -> bool:
    return ">APPLIED</span>" in result


def any_value(rows: list[Any]) -> Any:
    assert rows, "expected a row"
    return rows[0][0]
