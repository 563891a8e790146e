"""Timed renders: through the URLconf or a given view, warm rounds left out."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from batchboard.demo.measure import (
    WARM_ROUNDS,
    Landmarks,
    Timer,
    benchmark_user,
    landmarks,
    measure,
    unresolved_executions,
)
from batchboard.models import JobExecution, JobInstance
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_benchmark_user_holds_every_permission_without_a_row() -> None:
    user = benchmark_user()
    assert not User.objects.exists()
    assert user.is_staff and user.is_superuser and user.is_active
    assert user.has_perm("batchboard.view_jobexecution")


def test_a_timer_renders_the_resolved_page_and_keeps_only_kept_renders() -> None:
    timer = Timer(reverse("batchboard:executions"), benchmark_user())
    response, milliseconds = timer.render()
    assert response.status_code == 200
    assert milliseconds > 0
    timer.once(keep=False)
    assert timer.samples == []
    timer.once(keep=True)
    assert len(timer.samples) == 1
    assert timer.median == timer.samples[0]


def test_a_timer_calls_a_view_outside_the_urlconf() -> None:
    seen: list[str] = []

    def view(request: HttpRequest) -> HttpResponse:
        seen.append(request.GET["after"])
        return HttpResponse("ok")

    Timer("/floor/?after=7", benchmark_user(), view).once(keep=True)
    assert seen == ["7"]


def test_a_page_that_is_not_200_stops_the_benchmark() -> None:
    def missing(request: HttpRequest) -> HttpResponse:
        return HttpResponse(status=404)

    with pytest.raises(CommandError, match=r"^/gone/ answered 404\.$"):
        Timer("/gone/", benchmark_user(), missing).render()


def test_measure_goes_round_robin_and_keeps_repeat_samples() -> None:
    order: list[str] = []

    def page(name: str) -> Timer:
        def view(request: HttpRequest) -> HttpResponse:
            order.append(name)
            return HttpResponse(name)

        return Timer(f"/{name}/", benchmark_user(), view)

    timers = [page("a"), page("b")]
    measure(iter(timers), 3)
    assert order == ["a", "b"] * (3 + WARM_ROUNDS)
    assert [len(timer.samples) for timer in timers] == [3, 3]


def test_landmarks_list_jobs_busiest_first_and_the_newest_stepped_run() -> None:
    rare = factories.instance("rare")
    busy = [factories.instance("busy"), factories.instance("busy")]
    tie = [factories.instance("also-busy"), factories.instance("also-busy")]
    with_steps = factories.execution(busy[0])
    first = factories.step(with_steps, "extract")
    factories.step(with_steps, "load")
    factories.execution(rare, "STARTED")  # newer, but without a step
    newest = JobExecution.objects.order_by("-id").first()
    assert newest is not None
    assert landmarks("default") == Landmarks(
        max_execution=newest.pk,
        max_instance=tie[1].pk,
        jobs=[
            ("also-busy", 2, tie[1].pk, tie[0].pk),
            ("busy", 2, busy[1].pk, busy[0].pk),
            ("rare", 1, rare.pk, rare.pk),
        ],
        execution=with_steps.pk,
        instance=busy[0].pk,
        step=first.pk,
    )


def test_landmarks_of_a_history_without_steps_name_no_execution() -> None:
    factories.execution(factories.instance("only"))
    marks = landmarks("default")
    assert (marks.execution, marks.instance, marks.step) == (None, None, None)
    assert marks.max_instance == JobInstance.objects.get().pk


def test_unresolved_executions_counts_every_unresolved_status() -> None:
    for status in ("STARTING", "STARTED", "STOPPING", "UNKNOWN", "COMPLETED"):
        factories.execution(factories.instance(), status)
    assert unresolved_executions("default") == 4
