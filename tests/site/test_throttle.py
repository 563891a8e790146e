"""
Sign-in attempts wait per user name and address; nobody can lock anyone out.

The throttle's clock is replaced by one the tests move: no test sleeps.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone

from batchboard.site import proxies, throttle
from batchboard.site.database import SiteConfigurationError
from batchboard.site.models import SignInCount
from tests.site.production import site_settings

pytestmark = pytest.mark.django_db

SIGN_IN_PAGES = ("/login/", "/admin/login/")


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = timezone.now()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, by: timedelta) -> None:
        self.now += by


@pytest.fixture(autouse=True)
def clock() -> Iterator[Clock]:
    moving = Clock()
    with mock.patch.object(throttle, "clock", moving):
        yield moving


@pytest.fixture
def administrator(db: None) -> User:
    """A staff user, who may sign in on both pages."""
    return User.objects.create_user("administrator", password="pw", is_staff=True)


def _attempt(
    username: str,
    password: str,
    address: str = "192.0.2.1",
    url: str = "/login/",
    forwarded: str | None = None,
) -> tuple[bool, str]:
    """Return whether the attempt signed in, and the page's text."""
    headers = {} if forwarded is None else {"X-Forwarded-For": forwarded}
    client = Client(REMOTE_ADDR=address)
    response = client.post(
        url, {"username": username, "password": password}, headers=headers
    )
    signed_in = "_auth_user_id" in client.session
    # The site's page answers 429 while an attempt must wait; the admin's
    # page shows the same message with its own 200.
    assert response.status_code in ((302,) if signed_in else (200, 429))
    return signed_in, response.content.decode()


def _waiting(text: str) -> bool:
    return "Too many failed sign-in attempts" in text


def _fail(times: int, username: str = "administrator", **kwargs: str) -> list[bool]:
    """Send ``times`` wrong passwords at once; return which had to wait."""
    return [_waiting(_attempt(username, "wrong", **kwargs)[1]) for _ in range(times)]


def test_the_wait_is_free_at_first_then_doubles_up_to_a_minute() -> None:
    waits = [throttle.delay(n).total_seconds() for n in range(12)]
    assert waits == [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 60, 60]
    sprayed = [throttle.delay(n, spraying=True).total_seconds() for n in range(5)]
    assert sprayed == [0, 1, 2, 4, 8]
    assert throttle.delay(10**6) == throttle.MAX_DELAY


@pytest.mark.parametrize("url", SIGN_IN_PAGES)
def test_five_wrong_passwords_do_not_stop_the_right_one_from_another_address(
    administrator: User, url: str
) -> None:
    # Three free failures, a fourth that starts a wait, a fifth refused
    # unchecked during it.
    assert _fail(5, url=url, address="203.0.113.66") == [False] * 4 + [True]
    assert _attempt("administrator", "pw", address="198.51.100.7", url=url)[0]


@pytest.mark.parametrize("url", SIGN_IN_PAGES)
def test_the_right_password_from_the_same_address_passes_after_a_short_wait(
    administrator: User, url: str, clock: Clock
) -> None:
    _fail(5, url=url)
    signed_in, text = _attempt("administrator", "pw", url=url)
    assert not signed_in
    assert _waiting(text)
    clock.advance(throttle.delay(4))
    assert _attempt("administrator", "pw", url=url)[0]
    # The success cleared the pair: three free failures again.
    assert _fail(3, url=url) == [False] * 3


def test_an_attempt_during_the_wait_is_neither_checked_nor_counted(
    administrator: User, clock: Clock
) -> None:
    _fail(4)
    pair = SignInCount.objects.get(key__startswith="pair:")
    assert pair.failures == 4
    assert _fail(10) == [True] * 10
    pair.refresh_from_db()
    assert pair.failures == 4
    # Waiting out the longest wait always lets the right password in.
    clock.advance(throttle.MAX_DELAY)
    assert _attempt("administrator", "pw")[0]


def test_the_wait_never_exceeds_a_minute(administrator: User, clock: Clock) -> None:
    for _number in range(30):
        _fail(1)
        clock.advance(throttle.MAX_DELAY)
    assert SignInCount.objects.get(key__startswith="pair:").failures == 30
    assert _attempt("administrator", "pw")[0]


@pytest.mark.parametrize("url", SIGN_IN_PAGES)
@override_settings(FORWARDED_ALLOW_IPS="10.0.0.1")
def test_twenty_failures_behind_the_proxy_lock_no_other_user_out(
    administrator: User, url: str, clock: Clock
) -> None:
    """The proxy names each client, so each counts apart."""
    proxy = {"address": "10.0.0.1", "url": url}
    for number in range(20):
        _fail(1, f"guess{number}", forwarded="203.0.113.66", **proxy)
        _fail(1, forwarded="203.0.113.66", **proxy)
        clock.advance(timedelta(seconds=1))
    assert _attempt("administrator", "pw", forwarded="198.51.100.7", **proxy)[0]
    # A forged X-Forwarded-For from the attacker is to the left of what the
    # proxy appended, so it names the attacker all the same.
    forged = "198.51.100.7, 203.0.113.66"
    assert _waiting(_attempt("administrator", "pw", forwarded=forged, **proxy)[1])


@pytest.mark.parametrize("url", SIGN_IN_PAGES)
def test_twenty_failures_through_an_untrusted_proxy_lock_no_other_user_out(
    administrator: User, url: str, clock: Clock
) -> None:
    """Everyone shares the proxy's address: other names are not delayed."""
    User.objects.create_user("viewer", password="pw", is_staff=True)
    shared = {"address": "10.0.0.1", "url": url}
    for number in range(25):
        _fail(1, f"guess{number}", **shared)
    _fail(5, **shared)
    # A name that never failed from the address signs in at once.
    assert _attempt("viewer", "pw", **shared)[0]
    # The attacked name waits at most a minute, then signs in.
    clock.advance(throttle.MAX_DELAY)
    assert _attempt("administrator", "pw", **shared)[0]


def test_an_address_spraying_many_names_waits_from_each_names_first_failure(
    clock: Clock,
) -> None:
    User.objects.create_user("viewer", password="pw")
    for number in range(throttle.ADDRESS_LIMIT):
        assert _fail(1, f"guess{number}", address="203.0.113.9") == [False]
    assert _fail(2, "another", address="203.0.113.9") == [False, True]
    # The bound never refuses a right password for a name that did not fail.
    assert _attempt("viewer", "pw", address="203.0.113.9")[0]


def test_user_names_are_counted_case_blind(administrator: User) -> None:
    names = ("Administrator", "ADMINISTRATOR", "administrator ", "aDministrator")
    for name in names:
        _attempt(name, "wrong")
    assert _waiting(_attempt("administrator", "pw")[1])


def test_counts_are_forgotten_after_the_window(
    administrator: User, clock: Clock
) -> None:
    _fail(4)
    clock.advance(throttle.WINDOW)
    assert _fail(3) == [False] * 3
    assert SignInCount.objects.get(key__startswith="pair:").failures == 3
    clock.advance(throttle.WINDOW + timedelta(seconds=1))
    _fail(1, "someone-else")
    # Expired rows are collected on the next failure.
    assert SignInCount.objects.filter(expires__lte=clock()).count() == 0


def test_the_refusal_says_how_long_to_wait(administrator: User, clock: Clock) -> None:
    _fail(4)
    client = Client(REMOTE_ADDR="192.0.2.1")
    response = client.post("/login/", {"username": "administrator", "password": "pw"})
    assert response.status_code == 429
    # The fourth failure's wait, then the fifth's.
    assert "Try again in 1 second." in response.content.decode()
    clock.advance(timedelta(seconds=1))
    _fail(1)
    clock.advance(timedelta(milliseconds=500))
    again = client.post("/login/", {"username": "administrator", "password": "pw"})
    assert "Try again in 2 seconds." in again.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_right_password_refused_for_another_reason_counts_no_failure() -> None:
    """A reader's right password on the admin's page (staff only) is no guess."""
    User.objects.create_user("viewer", password="pw")
    for _number in range(6):
        assert not _attempt("viewer", "pw", url="/admin/login/")[0]
    assert SignInCount.objects.filter(failures__gt=0).count() == 0
    assert _attempt("viewer", "pw")[0]


def test_the_table_names_no_user_and_no_address(administrator: User) -> None:
    _fail(2, address="203.0.113.66")
    keys = list(SignInCount.objects.values_list("key", flat=True))
    assert len(keys) == 2
    assert not any("administrator" in key or "203.0.113" in key for key in keys)


# -- the client's address ------------------------------------------------------------


@pytest.mark.parametrize(
    ("trusted", "peer", "forwarded", "client"),
    [
        # A peer that is no trusted proxy is the client, whatever it says.
        ("127.0.0.1", "203.0.113.66", "198.51.100.7", "203.0.113.66"),
        # The trusted proxy's appended entry, the rightmost.
        ("127.0.0.1", "127.0.0.1", "198.51.100.7", "198.51.100.7"),
        ("127.0.0.1", "127.0.0.1", "1.2.3.4, 198.51.100.7", "198.51.100.7"),
        # Two trusted proxies: the first untrusted address from the right.
        ("10.0.0.0/8", "10.0.0.1", "198.51.100.7, 10.0.0.2", "198.51.100.7"),
        # Only proxies: the farthest of them.
        ("10.0.0.0/8", "10.0.0.1", "10.0.0.3, 10.0.0.2", "10.0.0.3"),
        # Garbage stops the walk at the last trusted hop.
        ("10.0.0.0/8", "10.0.0.1", "198.51.100.7, not-an-address", "10.0.0.1"),
        ("10.0.0.0/8", "10.0.0.1", "", "10.0.0.1"),
        ("*", "203.0.113.66", "198.51.100.7", "198.51.100.7"),
        ("127.0.0.1,::1", "::1", "2001:db8::5", "2001:db8::5"),
    ],
)
def test_the_client_address_is_what_the_trusted_proxy_saw(
    trusted: str, peer: str, forwarded: str, client: str
) -> None:
    meta = {"REMOTE_ADDR": peer, "HTTP_X_FORWARDED_FOR": forwarded}
    assert proxies.client_address(meta, proxies.trusted_networks(trusted)) == client


def test_gunicorn_and_the_site_read_one_forwarded_allow_ips() -> None:
    import runpy
    from pathlib import Path

    conf = Path(__file__).resolve().parents[2] / "gunicorn.conf.py"
    with mock.patch.dict("os.environ", {"FORWARDED_ALLOW_IPS": "10.1.0.0/16"}):
        assert runpy.run_path(str(conf))["forwarded_allow_ips"] == "10.1.0.0/16"
    assert site_settings(FORWARDED_ALLOW_IPS="10.1.0.0/16")["FORWARDED_ALLOW_IPS"] == (
        "10.1.0.0/16"
    )
    assert site_settings()["FORWARDED_ALLOW_IPS"] == proxies.DEFAULT
    with pytest.raises(SiteConfigurationError, match="FORWARDED_ALLOW_IPS"):
        site_settings(FORWARDED_ALLOW_IPS="10.1.0.0/16, proxy.example")


# -- atomic under concurrency --------------------------------------------------------

#: The suite's SQLite database lives in memory, shared between threads in
#: SQLite's shared-cache mode, which refuses a second writer at once
#: ("database table is locked") where a database file makes it wait. A file
#: serializes writers anyway (worker processes on a file are tested below):
#: the race these threads look for is PostgreSQL's.
concurrent = pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="in-memory SQLite refuses concurrent writers instead of queueing them",
)


def _in_threads(count: int, work: Callable[[], object]) -> list[object]:
    """Run ``work`` in ``count`` threads released together; return the results."""
    start = threading.Barrier(count)
    results: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            start.wait()
            results.append(work())
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results


@concurrent
@pytest.mark.django_db(transaction=True)
def test_concurrent_failures_are_each_counted_once(clock: Clock) -> None:
    counts = _in_threads(8, lambda: throttle.record_failure("pair:race", clock()))
    assert 8 in counts
    assert SignInCount.objects.get(key="pair:race").failures == 8


@concurrent
@pytest.mark.django_db(transaction=True)
def test_of_simultaneous_attempts_of_one_pair_one_is_checked(clock: Clock) -> None:
    throttle.record_failure("pair:burst", clock())
    claims = _in_threads(8, lambda: throttle._claim("pair:burst", clock()))
    assert claims.count(True) == 1


WORKER = """
import time
from django.utils import timezone
from batchboard.site import throttle
time.sleep(max(0.0, {start} - time.time()))
now = timezone.now()
for _number in range({failures}):
    throttle.record_failure("pair:race", now)
time.sleep(max(0.0, {start} + {pause} - time.time()))
print("claimed" if throttle._claim("pair:race", timezone.now()) else "waiting")
"""


@pytest.mark.slow
def test_worker_processes_on_a_sqlite_file_count_every_failure(
    tmp_path: Path,
) -> None:
    """
    Several worker processes of the standalone site on one SQLite file (the
    demo's database) count every failure once, and one claim wins.
    """
    import sqlite3
    import subprocess
    import sys
    import time

    from tests.site.commands import CHECKOUT, SITE_VARIABLES

    database = tmp_path / "site.sqlite3"
    env = {
        **{k: v for k, v in os.environ.items() if k not in SITE_VARIABLES},
        "DJANGO_DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{database}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    manage = [sys.executable, str(CHECKOUT / "manage.py")]
    subprocess.run(
        [*manage, "migrate", "-v0"], cwd=CHECKOUT, env=env, check=True, timeout=120
    )
    code = WORKER.format(start=time.time() + 4, pause=3, failures=25)
    workers = [
        subprocess.Popen(
            [*manage, "shell", "-c", code],
            cwd=CHECKOUT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [worker.communicate(timeout=120) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers), outputs
    with sqlite3.connect(database) as db:
        (failures,) = db.execute(
            "SELECT failures FROM batchboard_site_signincount WHERE key = ?",
            ("pair:race",),
        ).fetchone()
    assert failures == 100
    claims = sorted(out.split()[-1] for out, _err in outputs)
    assert claims == ["claimed"] + ["waiting"] * 3
