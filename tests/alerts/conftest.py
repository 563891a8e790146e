"""Fixtures of the alert tests: rules, channels and a real webhook receiver."""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from batchboard.alerts import channels
from batchboard.alerts.models import Channel, Rule
from tests import factories

SECRET = "whsec-test-3f9a1c"


@dataclass
class Received:
    """One request the receiver took."""

    body: dict[str, Any]
    raw: bytes
    signature: str
    key: str


@dataclass
class Receiver:
    """
    A webhook receiver on the loopback.

    ``plan`` lists the status of each next request (200 once it is empty);
    ``hang`` makes the next request wait until ``release`` is set.
    """

    url: str = ""
    received: list[Received] = field(default_factory=list)
    plan: list[int] = field(default_factory=list)
    hang: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)

    def accepted(self) -> list[Received]:
        return [item for item in self.received if item.key]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                status = state.plan.pop(0) if state.plan else 200
                hang = state.hang.is_set()
                state.hang.clear()
            state.received.append(
                Received(
                    json.loads(raw),
                    raw,
                    self.headers.get(channels.SIGNATURE_HEADER, ""),
                    self.headers.get(channels.IDEMPOTENCY_HEADER, ""),
                )
            )
            state.arrived.set()
            if hang:
                state.release.wait(30)
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_port}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()


@dataclass
class MailServer:
    """An SMTP server on the loopback that keeps each message it is given."""

    port: int = 0
    messages: list[Message] = field(default_factory=list)


@pytest.fixture
def mail_server() -> Iterator[MailServer]:
    state = MailServer()

    class Handler(socketserver.StreamRequestHandler):
        # The replies a client needs to hand over one message (RFC 5321).
        def reply(self, line: str) -> None:
            self.wfile.write(f"{line}\r\n".encode())

        def handle(self) -> None:
            self.reply("220 loopback")
            while line := self.rfile.readline():
                verb = line[:4].upper()
                if verb == b"DATA":
                    self.reply("354 end with a dot")
                    body = b""
                    while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                        body += chunk
                    state.messages.append(message_from_bytes(body))
                    self.reply("250 kept")
                elif verb == b"QUIT":
                    self.reply("221 bye")
                    return
                else:
                    self.reply("250 ok")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def owner(db: None) -> User:
    return factories.user("alerts-owner", *factories.VIEW, "manage_alerts")


def webhook(owner: User, url: str, name: str = "hook") -> Channel:
    return Channel.objects.create(
        name=name,
        kind="WEBHOOK",
        target=url,
        secret=SECRET,
        shown_target=channels.shown("WEBHOOK", url),
        owner=owner,
        created_at=timezone.now(),
    )


def email(owner: User, target: str, name: str = "mail") -> Channel:
    return Channel.objects.create(
        name=name,
        kind="EMAIL",
        target=target,
        shown_target=channels.shown("EMAIL", target),
        owner=owner,
        created_at=timezone.now(),
    )


def rule(owner: User, kind: str = "FAILED", *chosen: Channel, **fields: Any) -> Rule:
    made = Rule.objects.create(
        name=fields.pop("name", f"{kind.lower()} rule"),
        owner=owner,
        kind=kind,
        created_at=timezone.now(),
        **fields,
    )
    made.channels.set(chosen)
    return made


RuleMaker = Callable[..., Rule]
