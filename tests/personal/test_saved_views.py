"""Saved views: kept in batchboard's own tables, private or shared, never a cursor."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qsl

import pytest
from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from batchboard import conf
from batchboard.explorer import inputs
from batchboard.personal import lists
from batchboard.personal.models import MAX_VIEW_NAME, SavedView
from batchboard.routers import BatchboardRouter
from tests import factories

pytestmark = pytest.mark.django_db


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operators() -> Group:
    return Group.objects.create(name="operators")


@pytest.fixture
def alice(operators: Group) -> User:
    user = factories.user("alice", *factories.VIEW)
    user.groups.add(operators)
    return user


@pytest.fixture
def bob(operators: Group) -> User:
    user = factories.user("bob", *factories.VIEW)
    user.groups.add(operators)
    return user


@pytest.fixture
def carol() -> User:
    return factories.user("carol", *factories.VIEW)


def _save(client: Client, location: str, name: str = "failed payroll") -> int:
    response = client.post(
        reverse("batchboard:save_view"), {"location": location, "name": name}
    )
    assert response.status_code == 302, response.content
    return SavedView.objects.get(name=name, owner_id=client.session["_auth_user_id"]).pk


def _edit(client: Client, view_id: int, **fields: str) -> int:
    url = reverse("batchboard:edit_view", args=[view_id])
    return client.post(url, fields).status_code


def _all_forms(cls: type[inputs.ExplorerForm]) -> list[type[inputs.ExplorerForm]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _all_forms(sub)
    return found


def test_saved_views_route_to_the_state_database() -> None:
    router = BatchboardRouter()
    assert router.db_for_read(SavedView) == conf.state_alias()
    assert router.db_for_write(SavedView) == conf.state_alias()
    assert router.allow_migrate(conf.state_alias(), "batchboard", "savedview")


def test_every_continuation_field_of_the_forms_is_marked() -> None:
    """The keys a saved view drops are read off the forms, not listed by hand."""
    keys = {
        name
        for form in _all_forms(inputs.ExplorerForm)
        for name in lists.continuation_keys(form)
    }
    assert {"cursor", "after"} <= keys


@pytest.mark.parametrize("url_name", sorted(lists.LISTS))
def test_a_saved_view_never_keeps_a_continuation(alice: User, url_name: str) -> None:
    form = lists.LISTS[url_name]
    kwargs = {"job_name": "payroll"} if url_name == "job" else {}
    path = reverse(f"batchboard:{url_name}", kwargs=kwargs)
    every_key = {
        name
        for each in _all_forms(inputs.ExplorerForm)
        for name in lists.continuation_keys(each)
    }
    query = "&".join(f"{key}=00ff" for key in sorted(every_key))
    where = lists.address(f"{path}?{query}")
    kept = dict(parse_qsl(where.query))
    assert not set(kept) & every_key
    assert not set(kept) & set(lists.continuation_keys(form))
    assert where.url_name == url_name


def test_save_keeps_the_filters_and_opens_the_list(alice: User) -> None:
    client = _client(alice)
    location = "/executions/?status=FAILED&job=payroll&cursor=00ff&size=20&junk=1"
    view_id = _save(client, location)
    view = SavedView.objects.get(pk=view_id)
    assert view.owner_id == alice.pk
    assert view.url_name == "executions"
    assert dict(parse_qsl(view.query)) == {
        "status": "FAILED",
        "job": "payroll",
        "size": "20",
    }
    opened = client.get(reverse("batchboard:saved_view", args=[view_id]))
    assert opened.status_code == 302
    assert opened["Location"].startswith("/executions/?")
    assert "cursor" not in opened["Location"]
    assert client.get(opened["Location"]).status_code == 200


def test_a_job_page_keeps_its_job_name(alice: User) -> None:
    client = _client(alice)
    view_id = _save(client, "/jobs/nightly%2Fexport/?size=10", "nightly")
    opened = client.get(reverse("batchboard:saved_view", args=[view_id]))
    assert opened["Location"] == "/jobs/nightly%2Fexport/?size=10"


def test_renaming_keeps_links_working(alice: User) -> None:
    client = _client(alice)
    view_id = _save(client, "/executions/?status=FAILED")
    link = reverse("batchboard:saved_view", args=[view_id])
    assert _edit(client, view_id, action="rename", name="broken runs") == 302
    assert SavedView.objects.get(pk=view_id).name == "broken runs"
    assert client.get(link)["Location"] == "/executions/?status=FAILED"


def test_delete(alice: User) -> None:
    client = _client(alice)
    view_id = _save(client, "/executions/?status=FAILED")
    assert _edit(client, view_id, action="delete") == 302
    assert not SavedView.objects.filter(pk=view_id).exists()
    assert (
        client.get(reverse("batchboard:saved_view", args=[view_id])).status_code == 404
    )


def test_a_private_view_is_its_owners_only(alice: User, bob: User) -> None:
    view_id = _save(_client(alice), "/executions/?status=FAILED")
    other = _client(bob)
    assert (
        other.get(reverse("batchboard:saved_view", args=[view_id])).status_code == 404
    )
    assert (
        "failed payroll"
        not in other.get(reverse("batchboard:saved_views_menu")).content.decode()
    )
    assert _edit(other, view_id, action="delete") == 404


def test_a_shared_view_is_seen_by_the_group_only(
    alice: User, bob: User, carol: User, operators: Group
) -> None:
    owner = _client(alice)
    view_id = _save(owner, "/executions/?status=FAILED")
    assert _edit(owner, view_id, action="share", group=str(operators.pk)) == 302
    assert SavedView.objects.get(pk=view_id).group_id == operators.pk
    member = _client(bob)
    menu = member.get(reverse("batchboard:saved_views_menu")).content.decode()
    assert "failed payroll" in menu
    opened = member.get(reverse("batchboard:saved_view", args=[view_id]))
    assert opened["Location"] == "/executions/?status=FAILED"
    # A member may open it, not change it.
    assert _edit(member, view_id, action="rename", name="mine now") == 403
    assert _edit(member, view_id, action="delete") == 403
    assert SavedView.objects.get(pk=view_id).name == "failed payroll"
    outsider = _client(carol)
    assert (
        outsider.get(reverse("batchboard:saved_view", args=[view_id])).status_code
        == 404
    )
    # Back to private: the member no longer sees it.
    assert _edit(owner, view_id, action="share", group="") == 302
    assert (
        member.get(reverse("batchboard:saved_view", args=[view_id])).status_code == 404
    )


def test_sharing_with_a_group_one_is_not_in_is_refused(alice: User) -> None:
    client = _client(alice)
    view_id = _save(client, "/executions/?status=FAILED")
    strangers = Group.objects.create(name="strangers")
    assert _edit(client, view_id, action="share", group=str(strangers.pk)) == 400
    assert _edit(client, view_id, action="share", group="²") == 400
    assert SavedView.objects.get(pk=view_id).group_id is None


def test_one_default_view_per_user(alice: User) -> None:
    client = _client(alice)
    first = _save(client, "/executions/?status=FAILED", "first")
    second = _save(client, "/unresolved/", "second")
    assert client.get(reverse("batchboard:default_view"))["Location"] == reverse(
        "batchboard:saved_views"
    )
    assert _edit(client, first, action="default") == 302
    assert _edit(client, second, action="default") == 302
    assert list(
        SavedView.objects.filter(owner_id=alice.pk, is_default=True).values_list(
            "pk", flat=True
        )
    ) == [second]
    assert client.get(reverse("batchboard:default_view"))["Location"] == "/unresolved/"
    menu = client.get(reverse("batchboard:saved_views_menu")).content.decode()
    assert "Your default view: second" in menu
    assert _edit(client, second, action="undefault") == 302
    assert not SavedView.objects.filter(is_default=True).exists()


def test_the_database_allows_one_default_per_user(alice: User) -> None:
    now = timezone.now()
    common = {"owner_id": alice.pk, "url_name": "index", "created_at": now}
    SavedView.objects.create(name="a", is_default=True, updated_at=now, **common)
    with pytest.raises(IntegrityError), transaction.atomic():
        SavedView.objects.create(name="b", is_default=True, updated_at=now, **common)


@pytest.mark.parametrize(
    "fields",
    [
        {"location": "/executions/?status=FAILED", "name": ""},
        {"location": "/executions/?status=FAILED", "name": "x" * (MAX_VIEW_NAME + 1)},
        {"location": "/executions/?status=NOPE", "name": "n"},
        {"location": "/executions/1/", "name": "n"},
        {"location": "https://elsewhere.example/executions/", "name": "n"},
        {"location": "//elsewhere.example/executions/", "name": "n"},
        {"location": "/no/such/page/", "name": "n"},
        {"location": "/executions/?" + "a" * 5000, "name": "n"},
        {"location": "", "name": "n"},
        {"name": "n"},
    ],
)
def test_bad_input_is_a_400_and_saves_nothing(
    alice: User, fields: dict[str, str]
) -> None:
    response = _client(alice).post(reverse("batchboard:save_view"), fields)
    assert response.status_code == 400
    assert not SavedView.objects.exists()


def test_a_name_is_unique_per_owner(alice: User, bob: User) -> None:
    _save(_client(alice), "/executions/?status=FAILED")
    again = _client(alice).post(
        reverse("batchboard:save_view"),
        {"location": "/unresolved/", "name": "failed payroll"},
    )
    assert again.status_code == 400
    assert b"already have a view of that name" in again.content
    # Another user may use the same name.
    _save(_client(bob), "/unresolved/")
    assert SavedView.objects.filter(name="failed payroll").count() == 2


@pytest.mark.parametrize(
    "fields",
    [
        {"action": "rename", "name": ""},
        {"action": "rename", "name": "y" * (MAX_VIEW_NAME + 1)},
        {"action": "explode"},
        {},
    ],
)
def test_bad_edits_are_a_400(alice: User, fields: dict[str, str]) -> None:
    client = _client(alice)
    view_id = _save(client, "/executions/?status=FAILED")
    assert _edit(client, view_id, **fields) == 400
    assert SavedView.objects.get(pk=view_id).name == "failed payroll"


def test_renaming_onto_another_views_name_is_a_400(alice: User) -> None:
    client = _client(alice)
    _save(client, "/executions/?status=FAILED", "one")
    two = _save(client, "/unresolved/", "two")
    assert _edit(client, two, action="rename", name="one") == 400


def test_an_unknown_view_is_a_404(alice: User) -> None:
    client = _client(alice)
    assert client.get("/views/99999/").status_code == 404
    assert client.get(f"/views/{2**70}/").status_code == 404
    assert _edit(client, 99999, action="delete") == 404


def test_the_views_page_lists_and_continues(alice: User) -> None:
    client = _client(alice)
    for number in range(3):
        _save(client, f"/executions/?size={number + 1}", f"view {number}")
    with_small_pages = {"PAGE_SIZE": 2}
    from django.test import override_settings

    with override_settings(BATCHBOARD=with_small_pages):
        first = client.get(reverse("batchboard:saved_views"))
        assert first.status_code == 200
        page = first.content.decode()
        assert "view 2" in page and "view 1" in page and "view 0" not in page
        after = first.context["next_url"]
        assert after
        rest = client.get(after).content.decode()
        assert "view 0" in rest and "view 2" not in rest
    assert client.get("/views/?after=nope").status_code == 400


def test_the_views_need_only_read(alice: User) -> None:
    nobody = factories.user("nobody")
    client = _client(nobody)
    assert client.get(reverse("batchboard:saved_views")).status_code == 403
    anonymous = Client()
    assert anonymous.get(reverse("batchboard:saved_views")).status_code == 302


def test_list_pages_offer_save_this_view(alice: User) -> None:
    client = _client(alice)
    for url_name in sorted(lists.LISTS):
        if url_name == "job":
            factories.definition("payroll")
            url = reverse("batchboard:job", kwargs={"job_name": "payroll"})
        else:
            url = reverse(f"batchboard:{url_name}")
        response = client.get(url)
        assert response.status_code == 200, url_name
        assert b'action="/views/save/"' in response.content, url_name


def test_the_save_form_posts_with_its_csrf_token(alice: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    page = client.get("/executions/?status=FAILED&job=payroll").content.decode()
    form = page[page.index('action="/views/save/"') :]
    form = form[: form.index("</form>")]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    location = re.search(r'name="location" value="([^"]+)"', form)
    assert token and location
    fields = {
        "csrfmiddlewaretoken": token[1],
        "location": html.unescape(location[1]),
        "name": "from the page",
    }
    assert (
        client.post("/views/save/", {**fields, "csrfmiddlewaretoken": ""}).status_code
        == 403
    )
    assert client.post("/views/save/", fields).status_code == 302
    saved = SavedView.objects.get(name="from the page")
    assert dict(parse_qsl(saved.query)) == {"status": "FAILED", "job": "payroll"}


def test_the_menu_is_bounded_and_by_name(alice: User) -> None:
    from batchboard.personal.views import MENU_VIEWS

    for number in range(MENU_VIEWS + 1):
        factories.saved_view(alice, name=f"view {number:02d}")
    menu = _client(alice).get(reverse("batchboard:saved_views_menu"))
    names = [view.name for view in menu.context["views"]]
    assert names == sorted(names)
    assert len(names) == MENU_VIEWS
    assert menu.context["more"] is True
    assert b"More on the views page." in menu.content


def test_the_header_offers_the_views_menu_and_the_time_zone(alice: User) -> None:
    page = _client(alice).get(reverse("batchboard:executions")).content.decode()
    assert f'data-bb-views-menu="{reverse("batchboard:saved_views_menu")}"' in page
    assert f'href="{reverse("batchboard:time_zone")}"' in page
