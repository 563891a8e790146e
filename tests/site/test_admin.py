"""The admin over the metadata: read-only, redacted, and never counting."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse

from batchboard import conf
from batchboard.admin import registrations as batchboard_admin
from batchboard.admin.registrations import (
    FIRST_PAGES,
    LookaheadPaginator,
    ReadOnlyAdmin,
)
from batchboard.models import (
    DefinitionUpgrade,
    JobDefinition,
    JobExecution,
    JobInstance,
)
from tests.actions import factories
from tests.site.history import OWNER_TOKEN, SECRET, T0, History, create_history

REGISTERED = [
    model
    for model in apps.get_app_config("batchboard").get_models()
    if model is not DefinitionUpgrade
]


@pytest.fixture
def history(db: None) -> History:
    return create_history()


@pytest.fixture
def viewer(db: None) -> Client:
    """Log in a staff user holding only the view permissions of batchboard."""
    user = User.objects.create_user("viewer", password="viewer", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="batchboard", codename__startswith="view_"
        )
    )
    client = Client()
    assert client.login(username="viewer", password="viewer")
    return client


def _forbidden_text() -> list[str]:
    return [SECRET, OWNER_TOKEN.hex(), repr(OWNER_TOKEN)]


def _counts(queries: list[dict[str, str]]) -> list[str]:
    return [q["sql"] for q in queries if re.search(r"\bCOUNT\s*\(", q["sql"], re.I)]


def test_every_model_but_the_composite_key_is_registered_read_only() -> None:
    """Eleven models are registered; none can be added, changed or deleted."""
    registered = {m for m in REGISTERED if admin.site.is_registered(m)}
    assert registered == set(REGISTERED)
    assert len(registered) == 11
    # The Django admin cannot register a composite primary key; definition
    # pages list the upgrade edges instead.
    assert not admin.site.is_registered(DefinitionUpgrade)
    for model in registered:
        model_admin = admin.site.get_model_admin(model)
        assert isinstance(model_admin, ReadOnlyAdmin)
        assert model_admin.has_add_permission(None) is False  # type: ignore[arg-type]
        assert model_admin.has_change_permission(None) is False  # type: ignore[arg-type]
        assert model_admin.has_delete_permission(None) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_changelist_loads_redacted_without_count(
    model: type, history: History, viewer: Client
) -> None:
    """Each changelist renders, shows no payload and runs no COUNT."""
    url = reverse(f"admin:batchboard_{model._meta.model_name}_changelist")
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = viewer.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    for text in _forbidden_text():
        assert text not in body
    assert _counts(captured.captured_queries) == []
    assert "DISTINCT" not in " ".join(q["sql"] for q in captured.captured_queries)
    assert 'class="addlink"' not in body
    assert 'name="action"' not in body


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_change_page_loads_redacted(
    model: type, history: History, viewer: Client
) -> None:
    """Each change page renders read-only without payloads or token bytes."""
    obj = next(o for o in history.objects() if type(o) is model)
    url = reverse(f"admin:batchboard_{model._meta.model_name}_change", args=[obj.pk])
    response = viewer.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    for text in _forbidden_text():
        assert text not in body
    assert 'type="submit" value="Save"' not in body
    assert "<textarea" not in body


def test_instance_page_lists_parameter_names_and_types(
    history: History, viewer: Client
) -> None:
    """Parameters appear as names and types; the instance key as hex."""
    url = reverse("admin:batchboard_jobinstance_change", args=[history.instance.pk])
    body = viewer.get(url).content.decode()
    assert "region (STRING)" in body
    assert "run_date (I64)" in body
    assert "20261130" not in body
    assert bytes(history.instance.instance_key).hex() in body


def test_execution_page_shows_owner_flag_and_descriptor(
    history: History, viewer: Client
) -> None:
    """The owner token shows as a flag; the context as its descriptor."""
    url = reverse("admin:batchboard_jobexecution_change", args=[history.restart.pk])
    body = viewer.get(url).content.decode()
    assert "icon-yes.svg" in body
    assert "batchboard.tests.v1 v1 (format 1)" in body


def test_definition_page_lists_upgrade_edges(history: History, viewer: Client) -> None:
    """A definition's page names its upgrade edges by key and revisions."""
    url = reverse("admin:batchboard_jobdefinition_change", args=[history.upgraded.pk])
    body = viewer.get(url).content.decode()
    assert "rename-load: r1 → r2" in body


def test_status_filter_comes_from_choices(history: History, viewer: Client) -> None:
    """Filtering by status narrows the list without a COUNT or DISTINCT."""
    url = reverse("admin:batchboard_jobexecution_changelist")
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = viewer.get(url, {"status__exact": "FAILED"})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 1
    assert _counts(captured.captured_queries) == []
    for status in ("STARTING", "ABANDONED", "UNKNOWN"):
        assert f"status__exact={status}" in response.content.decode()


def test_changelist_rows_come_newest_first(history: History, viewer: Client) -> None:
    """Executions are ordered by descending id."""
    url = reverse("admin:batchboard_jobexecution_changelist")
    response = viewer.get(url)
    ids = [row.pk for row in response.context["cl"].result_list]
    assert ids == [history.restart.pk, history.failed.pk]


def test_viewer_without_permission_is_refused(history: History, db: None) -> None:
    """A staff user without view permissions cannot open the changelist."""
    user = User.objects.create_user("nobody", password="x", is_staff=True)
    client = Client()
    client.force_login(user)
    url = reverse("admin:batchboard_jobexecution_changelist")
    assert client.get(url).status_code == 403


def test_posting_a_change_is_refused(history: History, viewer: Client) -> None:
    """Even a crafted POST cannot change metadata through the admin."""
    url = reverse("admin:batchboard_jobinstance_change", args=[history.instance.pk])
    response = viewer.post(url, {"job_name": "renamed"})
    assert response.status_code == 403
    assert JobInstance.objects.get(pk=history.instance.pk).job_name == "nightly_export"


@pytest.mark.django_db
def test_first_pages_count_a_bounded_window() -> None:
    """The count fetches at most one window of keys and pages resolve in it."""
    history = create_history()
    base = JobExecution.objects.order_by("-id")
    exact = LookaheadPaginator(base, per_page=1)
    assert (exact.count, exact.num_pages, exact.truncated) == (2, 2, False)
    assert list(exact.page(2).object_list) == [history.failed]
    empty = LookaheadPaginator(JobExecution.objects.none(), per_page=3)
    assert (empty.count, empty.truncated) == (0, False)


@pytest.mark.django_db
def test_numbered_pages_stop_at_the_window() -> None:
    """Past the window the count stops at it; later rows need the keyset link."""
    for number in range(FIRST_PAGES + 5):
        JobDefinition.objects.create(
            job_name="many",
            definition_revision=f"r{number}",
            manifest_format=1,
            manifest_digest=number.to_bytes(32, "big"),
            manifest={},
            registered_at=T0,
        )
    paginator = LookaheadPaginator(JobDefinition.objects.order_by("-id"), per_page=1)
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        assert paginator.count == FIRST_PAGES
        assert paginator.truncated is True
    assert len(captured.captured_queries) == 1
    assert f"LIMIT {FIRST_PAGES + 1}" in captured.captured_queries[0]["sql"]
    assert _counts(captured.captured_queries) == []
    assert paginator.num_pages == FIRST_PAGES


def _walk(client: Client, url: str, query: dict[str, str]) -> list[list[int]]:
    """Follow the next links from the first page; return the ids of each page."""
    pages: list[list[int]] = []
    response = client.get(url, query)
    while True:
        assert response.status_code == 200
        pages.append([row.pk for row in response.context["cl"].result_list])
        next_url = response.context["cl"].next_url
        if next_url is None:
            return pages
        assert len(pages) < 50, "the walk does not end"
        response = client.get(url + next_url)


@pytest.fixture
def deep(db: None, monkeypatch: pytest.MonkeyPatch) -> list[JobExecution]:
    """
    Return 15 executions, every third FAILED, listed four to a page with
    numbered pages for the first two only.
    """
    monkeypatch.setattr(admin.site.get_model_admin(JobExecution), "list_per_page", 4)
    monkeypatch.setattr(batchboard_admin, "FIRST_PAGES", 2)
    definition = factories.definition()
    return [
        factories.execution(
            "FAILED" if number % 3 == 0 else "COMPLETED", job_definition=definition
        )
        for number in range(15)
    ]


EXECUTIONS = "admin:batchboard_jobexecution_changelist"


def test_keyset_walk_returns_every_row_once(
    deep: list[JobExecution], viewer: Client
) -> None:
    """Next links lead through the whole list, newest first, each row once."""
    pages = _walk(viewer, reverse(EXECUTIONS), {})
    ids = [pk for page in pages for pk in page]
    assert ids == sorted((e.pk for e in deep), reverse=True)
    assert [len(page) for page in pages] == [4, 4, 4, 3]


def test_keyset_walk_keeps_the_status_filter(
    deep: list[JobExecution], viewer: Client
) -> None:
    """Filtered, the walk yields exactly the matching rows, each once."""
    pages = _walk(viewer, reverse(EXECUTIONS), {"status__exact": "FAILED"})
    ids = [pk for page in pages for pk in page]
    failed = sorted((e.pk for e in deep if e.status == "FAILED"), reverse=True)
    assert ids == failed
    assert len(pages) == 2


def test_a_keyset_page_is_one_query_without_offset_or_count(
    deep: list[JobExecution], viewer: Client
) -> None:
    """A page reached by its keyset link skips nothing and counts nothing."""
    after = sorted(e.pk for e in deep)[-3]
    url = reverse(EXECUTIONS)
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = viewer.get(url, {"after": str(after), "status__exact": "COMPLETED"})
    assert response.status_code == 200
    metadata = [
        q["sql"] for q in captured.captured_queries if "ob_job_execution" in q["sql"]
    ]
    assert len(metadata) == 1
    sql = metadata[0]
    assert "OFFSET" not in sql.upper()
    assert "LIMIT 5" in sql
    assert "DISTINCT" not in sql.upper()
    assert _counts(captured.captured_queries) == []
    rows = [row.pk for row in response.context["cl"].result_list]
    expected = sorted(
        (e.pk for e in deep if e.pk < after and e.status == "COMPLETED"), reverse=True
    )
    assert rows == expected[:4]
    body = response.content.decode()
    assert f"Job executions older than #{after}." in body
    # Filter links start again from the newest rows; only "next" carries a key.
    assert body.count("after=") == 1
    assert f"after={rows[-1]}" in response.context["cl"].next_url
    assert "status__exact=COMPLETED" in response.context["cl"].next_url


def test_numbered_pages_end_where_the_keyset_takes_over(
    deep: list[JobExecution], viewer: Client
) -> None:
    """Page numbers cover the first pages; past them a page number is refused."""
    url = reverse(EXECUTIONS)
    second = viewer.get(url, {"p": "2"})
    assert second.status_code == 200
    newest = sorted((e.pk for e in deep), reverse=True)
    assert [row.pk for row in second.context["cl"].result_list] == newest[4:8]
    assert second.context["cl"].next_url == f"?after={newest[7]}"
    assert "8 newest job executions in numbered pages" in second.content.decode()
    beyond = viewer.get(url, {"p": "3"})
    assert beyond.status_code == 302
    assert "e=1" in beyond["Location"]


@pytest.mark.parametrize(
    "query",
    [
        {"after": "abc"},
        {"after": "0"},
        {"after": "-5"},
        {"after": "007"},
        {"after": "1.5"},
        {"after": " 12"},
        {"after": "\u0661\u0662"},
        {"after": "9223372036854775808"},
        {"after": "99999999999999999999999"},
        {"after": ["12", "13"]},
        {"after": "12", "p": "2"},
        {"after": "12", "all": ""},
    ],
    ids=lambda q: repr(q),
)
def test_a_tampered_keyset_is_a_clear_400(
    query: dict[str, str], deep: list[JobExecution], viewer: Client
) -> None:
    """A key that is not one plain row id is explained, not a 500 or a redirect."""
    url = reverse(EXECUTIONS)
    with CaptureQueriesContext(connections[conf.database_alias()]) as captured:
        response = viewer.get(url, query)
    assert response.status_code == 400
    body = response.content.decode()
    assert "parameter must appear once, as the id of the last row" in body
    assert f'href="{url}"' in body
    assert not [q for q in captured.captured_queries if "ob_job_" in q["sql"]]


def test_the_largest_key_is_accepted(deep: list[JobExecution], viewer: Client) -> None:
    """The bigint maximum is a valid key: it lists from the newest row."""
    response = viewer.get(reverse(EXECUTIONS), {"after": str(2**63 - 1)})
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == 4


def test_a_keyset_page_past_the_end_is_empty(
    deep: list[JobExecution], viewer: Client
) -> None:
    """A key below every row lists nothing and offers no next page."""
    response = viewer.get(reverse(EXECUTIONS), {"after": "1"})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []
    assert response.context["cl"].next_url is None


def test_columns_are_not_sortable(history: History, viewer: Client) -> None:
    """No column header offers a sort that would bypass the id index."""
    url = reverse("admin:batchboard_jobexecution_changelist")
    response = viewer.get(url)
    assert 'class="sortable' not in response.content.decode()
    assert "?o=" not in response.content.decode()


def _both_result_lists(model: type, query: str) -> tuple[list[list[str]], ...]:
    from django.contrib.admin.templatetags.admin_list import results
    from django.test import RequestFactory

    from batchboard.templatetags.batchboard_admin import fast_result_list

    opts = model._meta
    request = RequestFactory().get(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist") + query
    )
    request.user = User.objects.create_superuser("root", password="root")
    # The admin preserves filters only on a request resolved to its changelist.
    request.resolver_match = resolve(request.path_info)
    cl = admin.site._registry[model].get_changelist_instance(request)
    cl.formset = None  # as changelist_view sets it for a non-editable list
    assert cl.result_list, "the history gives every changelist rows"
    django_cells = [list(row) for row in results(cl)]
    fast_cells = [list(row) for row in fast_result_list(cl)["results"]]
    return django_cells, fast_cells


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_fast_result_list_renders_what_django_renders(
    model: type, history: History
) -> None:
    """batchboard_result_list gives Django's result_list cells, cell for cell."""
    django_cells, fast_cells = _both_result_lists(model, "")
    for fast_row, django_row in zip(fast_cells, django_cells, strict=True):
        for fast_cell, django_cell in zip(fast_row, django_row, strict=True):
            assert fast_cell == django_cell


def test_fast_result_list_keeps_the_preserved_filters(history: History) -> None:
    """Row links carry the changelist's filters, as Django's do."""
    django_cells, fast_cells = _both_result_lists(JobExecution, "?status__exact=FAILED")
    assert "_changelist_filters=status__exact%3DFAILED" in fast_cells[0][1]
    assert fast_cells == django_cells


def test_changelists_use_the_fast_result_list(history: History, viewer: Client) -> None:
    """Every batchboard changelist renders its rows through batchboard_result_list."""
    response = viewer.get(reverse("admin:batchboard_jobexecution_changelist"))
    names = [t.name for t in response.templates]
    assert "admin/batchboard/change_list.html" in names
