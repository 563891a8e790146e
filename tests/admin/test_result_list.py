"""batchboard_result_list: Django's changelist cells, rendered in one pass."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin.templatetags.admin_list import results
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import resolve, reverse

from batchboard.models import JobExecution
from batchboard.templatetags.batchboard_admin import fast_result_list
from tests.admin.conftest import REGISTERED
from tests.site.history import History


def _both_result_lists(model: type, query: str) -> tuple[list[list[str]], ...]:
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
