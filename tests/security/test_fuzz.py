"""
The hostile-input campaign over every URL pattern of the standalone site.

Targets, parameters and which page reads which come from the source
(:mod:`tests.security.campaign`). For each of four roles (anonymous, a
viewer with the Read class, an operator with Lifecycle, an administrator
with every class), each URL pattern and each method it answers (GET, POST),
plain and, where the page consults the htmx headers, as htmx (with an
unreadable ``HX-Current-URL``), the campaign:

1. finds the page's baseline: a valid value for each parameter it reads,
   one at a time, kept if the page still accepts it (below 400), until the
   page reads nothing new (so a job name unlocks a purge plan's parameters);
2. sends each hostile value to each parameter it read, ONE at a time, the
   others staying valid, and the parameter twice (valid, then hostile);
3. sends a few hostile values to every other declared parameter at once,
   in one request per value (a page that reads none of them ignores them);
4. sends each hostile value in each path parameter, the others real.

Every answer is below 500, no markup comes back raw, no payload reaches a
role without ``view_parameter_values``, and no GET writes a row. The log,
configured as the standalone site configures it, shows no traceback and no
server error; batchboard's own records carry no traceback whatever the
site's configuration. The counts are printed.
"""

from __future__ import annotations

import io
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.db import connections, router
from django.db.models import IntegerField, Model
from django.http import HttpResponse
from django.test import Client

from batchboard import actions
from batchboard.actions.bulk.plan import bulk_digest
from batchboard.api import tokens
from tests import factories
from tests.security import campaign
from tests.security.conftest import site_log
from tests.site.history import SECRET, History, create_history

pytestmark = pytest.mark.django_db

__all__ = ["site_log"]

ROLES = ("anonymous", "viewer", "operator", "administrator")
RAW_TAG = re.compile(r"<bbx-")
#: An htmx request, from a page whose address cannot be read.
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://["}


def _users() -> None:
    view = Permission.objects.filter(
        content_type__app_label="batchboard", codename__startswith="view_"
    ).exclude(codename="view_parameter_values")
    grants = {
        "viewer": [],
        "operator": ["operate_lifecycle"],
        "administrator": [
            "operate_lifecycle",
            "operate_destructive",
            "view_parameter_values",
        ],
    }
    for name, extra in grants.items():
        # The operator and the administrator also use the admin.
        user = User.objects.create_user(name, password=name, is_staff=name != "viewer")
        user.user_permissions.set(
            [
                *view,
                *Permission.objects.filter(
                    content_type__app_label="batchboard", codename__in=extra
                ),
            ]
        )


def _snapshot() -> list[tuple[object, ...]]:
    """Return each table's row count and largest key, one statement per database."""
    by_alias: dict[str, list[type[Model]]] = {}
    for model in (
        *apps.get_app_config("batchboard").get_models(),
        User,
        apps.get_model("admin", "LogEntry"),
    ):
        alias = router.db_for_read(model) or "default"
        by_alias.setdefault(alias, []).append(model)
    out = []
    for alias, models in sorted(by_alias.items()):
        connection = connections[alias]
        parts = []
        for model in models:
            table = connection.ops.quote_name(model._meta.db_table)
            parts.append(f"(SELECT COUNT(*) FROM {table})")
            pk = model._meta.pk
            if isinstance(pk, IntegerField) and pk.column:
                key = connection.ops.quote_name(pk.column)
                parts.append(f"(SELECT MAX({key}) FROM {table})")
        with connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(parts))
            out.append(tuple(cursor.fetchone()))
    return out


Params = dict[str, list[str]]


def _refused(response: HttpResponse) -> bool:
    """
    Return whether a page answered with an error message of its own.

    The console's results and the purge page name a refused request in
    their ``error``; a page that took the request has none. A value that
    leaves no error is preferred for the baseline, so that the one hostile
    parameter meets code that runs with every other value valid.
    """
    context = getattr(response, "context", None)
    return bool(context is not None and context.get("error"))


@dataclass
class Campaign:
    """One role's requests, their judgement and the counts."""

    world: History
    universe: campaign.Universe
    caplog: pytest.LogCaptureFixture
    log: io.StringIO
    role: str
    client: Client = field(init=False)
    requests: int = 0
    pairs: set[tuple[str, str, str]] = field(default_factory=set)
    seen: int = 0
    written: int = 0

    def __post_init__(self) -> None:
        self.client = self._sign_in()

    def _sign_in(self) -> Client:
        client = Client()
        if self.role != "anonymous":
            client.force_login(User.objects.get(username=self.role))
        return client

    def send(
        self,
        method: str,
        url: str,
        params: Params,
        *,
        htmx: bool,
        what: str,
    ) -> HttpResponse:
        """Send one request and judge its answer and the log it wrote."""
        headers = HTMX if htmx else {}
        if method == "GET":
            response = self.client.get(url, params, **headers)
        else:
            response = self.client.post(url, params, **headers)
        self.requests += 1
        where = (self.role, method, url[:120], "htmx" if htmx else "page", what)
        assert response.status_code < 500, where
        # A download streams its file: read all of it, as a browser would.
        raw = (
            b"".join(response.streaming_content)
            if response.streaming
            else response.content
        )
        body = raw.decode("utf-8", "replace")
        assert not RAW_TAG.search(body), where
        assert not RAW_TAG.search(response.get("Location", "")), where
        if self.role != "administrator":
            assert SECRET not in body, where
        # batchboard's own records, whatever the site's logging: no traceback.
        records = self.caplog.records[self.seen :]
        self.seen = len(self.caplog.records)
        for record in records:
            if record.name.startswith("batchboard"):
                assert record.exc_info is None, (where, record.getMessage()[:300])
        # The standalone site's log: no traceback, no server error.
        text = self.log.getvalue()
        written, self.written = text[self.written :], len(text)
        assert "Traceback" not in written, (where, written[:2000])
        assert " ERROR django.request " not in written, (where, written[:2000])
        # Signing in or out changed the session: start the role afresh.
        if "sessionid" in response.cookies:
            self.client = self._sign_in()
        return response

    def baseline(
        self, method: str, url: str, target: campaign.Target, htmx: bool
    ) -> tuple[Params, set[str], bool]:
        """
        Return valid values the page accepts together, what it reads and
        whether it consults the htmx headers.
        """
        base: Params = {}
        reads: set[str] = set()
        htmx_read = False
        tried: set[str] = set()
        password = None if self.role == "anonymous" else self.role
        for _round in range(4):
            with campaign.recording() as read:
                response = self.send(method, url, base, htmx=htmx, what="baseline")
            if response.status_code == 405:
                return base, set(), False
            reads |= read.keys
            htmx_read = htmx_read or read.htmx
            if (
                target.changelist
                and target.model is not None
                and method == "GET"
                and response.status_code == 200
            ):
                # A changelist shown reads its parameters from a dict copy.
                reads.update(campaign.ADMIN_CHANGELIST)
                reads.update(campaign.admin_filters(target.model))
            new = sorted(reads - tried)
            if not new:
                break
            for name in new:
                tried.add(name)
                accepted: Params | None = None
                for value in campaign.valid_values(
                    name, self.universe, self.world, password
                ):
                    candidate = {**base, name: [value]}
                    answer = self.send(
                        method, url, candidate, htmx=htmx, what=f"valid {name}"
                    )
                    if answer.status_code >= 400:
                        continue
                    accepted = accepted or candidate
                    if not _refused(answer):
                        # The page took the whole request: keep this one.
                        accepted = candidate
                        break
                base = accepted or base
        return base, reads, htmx_read

    def fuzz(self, target: campaign.Target) -> None:
        url = campaign.check_fill(target, self.world)
        for method in ("GET", "POST"):
            # As htmx too if the page consults the htmx headers (batchboard's
            # pages do, to answer with a fragment; the admin's never do).
            variants = [False]
            while variants:
                htmx = variants.pop(0)
                before = _snapshot() if method == "GET" else None
                base, reads, consults = self.baseline(method, url, target, htmx)
                if consults and not htmx:
                    variants.append(True)
                for name in sorted(reads):
                    self.pairs.add((target.route, method, name))
                    for value in campaign.HOSTILE:
                        self.send(
                            method,
                            url,
                            {**base, name: [value]},
                            htmx=htmx,
                            what=f"{name}={value[:20]!r}",
                        )
                    valid = base.get(name, ["1"])
                    self.send(
                        method,
                        url,
                        {**base, name: [*valid, "²"]},
                        htmx=htmx,
                        what=f"{name} repeated",
                    )
                others = [name for name in self.universe.names if name not in reads]
                for value in campaign.TOGETHER:
                    self.send(
                        method,
                        url,
                        {**base, **{name: [value] for name in others}},
                        htmx=htmx,
                        what=f"every other parameter={value!r}",
                    )
                if before is not None:
                    assert _snapshot() == before, (self.role, target.route, htmx)
        for name in campaign.path_parameters(target):
            for value in campaign.HOSTILE:
                if not value:
                    continue
                hostile = campaign.fill(target, self.world, (name, value))
                self.send("GET", hostile, {}, htmx=False, what=f"path {name}")


@pytest.fixture
def world(db: None) -> Iterator[History]:
    history = create_history()
    _users()
    # batchboard's own state that admin pages name: an API token.
    tokens.create_token(User.objects.get(username="operator"), "fuzz", ["READ"])
    # An alert channel, whose page names it.
    factories.alert_channel(User.objects.get(username="administrator"))
    # A saved view, whose address the views' pages take.
    factories.saved_view(User.objects.get(username="administrator"))
    # A retention policy, whose page names it.
    factories.retention_policy(
        User.objects.get(username="administrator"), history.instance.job_name
    )
    # And a bulk operation: releasing an instance that holds nothing.
    items = [(history.instance.pk, 0)]
    filters = {"list": "instances", "job": history.instance.job_name}
    actions.apply_bulk(
        user=User.objects.get(username="administrator"),
        action="RELEASE_HOLD",
        filters=filters,
        items=items,
        digest=bulk_digest("RELEASE_HOLD", filters, items),
        bulk_id="fuzz-bulk",
        reason_code="HOLD_NO_LONGER_NEEDED",
    )
    yield history
    # Sign-in attempts were throttled; later tests start unthrottled.
    cache.clear()


def test_every_url_pattern_fills_its_path_parameters(world: History) -> None:
    """A pattern with a parameter the campaign cannot fill fails here."""
    targets = campaign.targets()
    assert len(targets) > 60
    for target in targets:
        campaign.check_fill(target, world)


def test_the_fill_fails_loudly_on_an_unknown_parameter(world: History) -> None:
    (target, *_rest) = [t for t in campaign.targets() if "<int:step_id>" in t.route]
    unknown = campaign.Target(
        target.route.replace("step_id", "stage_id"), target.pattern, None
    )
    with pytest.raises(campaign.UnfilledParameter, match="stage_id"):
        campaign.fill(unknown, world)


def test_the_parameters_come_from_the_forms_and_the_source() -> None:
    universe = campaign.Universe.build()
    # A field of each kind of form, a key read by hand and the admin's own.
    for name in (
        "size",  # the explorer's list form
        "after",  # the execution page, the purge plan, the admin keyset
        "min_age_seconds",  # the purge criteria
        "expected_version",  # the action forms
        "failure_id",  # the recovery directive
        "username",  # the sign-in form
        "age_days",  # read by hand by the purge criteria
        "panel",  # read by hand by the recovery proposal
        "status__exact",  # an admin filter
        "_selected_action",  # an admin action
    ):
        assert name in universe.names, name


@pytest.mark.parametrize("role", ROLES)
def test_no_hostile_value_gets_a_server_error(
    world: History,
    role: str,
    caplog: pytest.LogCaptureFixture,
    site_log: io.StringIO,
    capsys: pytest.CaptureFixture[str],
    record_property: Any,
) -> None:
    started = time.monotonic()
    universe = campaign.Universe.build()
    targets = campaign.targets()
    run = Campaign(world, universe, caplog, site_log, role)
    with caplog.at_level(logging.WARNING):
        for target in targets:
            run.fuzz(target)
    counts: dict[str, Any] = {
        "role": role,
        "url patterns": len(targets),
        "parameters": len(universe.names),
        "forms": len(campaign.form_classes()),
        "pattern-parameter pairs fuzzed one at a time": len(run.pairs),
        "requests": run.requests,
        "seconds": round(time.monotonic() - started, 1),
    }
    record_property("fuzz_campaign", counts)
    with capsys.disabled():
        print(f"\nfuzz campaign: {counts}")
