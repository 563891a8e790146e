"""
What the benchmark commands share: timed in-process renders, their options
and the landmarks of the history they request pages of.

Pages are rendered through their real views with an unsaved superuser, so
only the page's own statements are measured, and round-robin over every
page, so that a busy moment on the machine slows all of them alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from django.http import HttpResponse
from django.template.response import SimpleTemplateResponse
from django.test import RequestFactory
from django.urls import resolve
from django_htmx.middleware import HtmxDetails

from batchboard import vocabulary

#: Rounds rendered before any time is kept: they warm caches.
WARM_ROUNDS = 2


def benchmark_user() -> User:
    """
    Return an unsaved, signed-in staff superuser.

    It holds every permission (the admin's too) without a session or any
    row of its own, so measuring a page adds no query of the user's.
    """
    return User(username="benchmark", is_staff=True, is_superuser=True, is_active=True)


@dataclass
class Timer:
    """
    Render one URL on demand and keep the time of every kept render.

    The view is the one the URLconf resolves the path to, unless ``view``
    names another (a reference view outside the URLconf).
    """

    path: str
    user: User
    view: Callable[..., HttpResponse] | None = None
    samples: list[float] = field(default_factory=list)
    #: Ask as htmx does, for a fragment (a region loaded or polled on its own).
    fragment: bool = False

    def render(self) -> tuple[HttpResponse, float]:
        """Render the page once; return the response and its milliseconds."""
        headers = {"HX-Request": "true"} if self.fragment else {}
        request = RequestFactory().get(self.path, headers=headers)
        request.user = self.user
        # What django-htmx's middleware gives every request.
        request.htmx = HtmxDetails(request)  # type: ignore[attr-defined]
        view = self.view
        args: tuple[Any, ...] = ()
        kwargs: dict[str, Any] = {}
        if view is None:
            match = resolve(request.path_info)
            view, args, kwargs = match.func, match.args, match.kwargs
        started = time.perf_counter()
        response = view(request, *args, **kwargs)
        if isinstance(response, SimpleTemplateResponse):
            response.render()
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise CommandError(f"{self.path} answered {response.status_code}.")
        return response, elapsed * 1000

    def once(self, keep: bool) -> None:
        _response, milliseconds = self.render()
        if keep:
            self.samples.append(milliseconds)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


@dataclass(frozen=True)
class Landmarks:
    """Where in a history the benchmarks aim their pages."""

    max_execution: int
    max_instance: int
    #: Every job name with its instances: (name, count, newest id, oldest
    #: id), the busiest first, ties by name.
    jobs: list[tuple[str, int, int, int]]
    #: The newest execution that has steps, its instance and its first step.
    execution: int | None
    instance: int | None
    step: int | None


def landmarks(alias: str) -> Landmarks:
    """Return the landmarks of the history on ``alias`` (one with executions)."""
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT max(id) FROM ob_job_execution")
        max_execution = int(cursor.fetchone()[0])
        cursor.execute("SELECT max(id) FROM ob_job_instance")
        max_instance = int(cursor.fetchone()[0])
        cursor.execute(
            "SELECT job_name, count(*), max(id), min(id) FROM ob_job_instance "
            "GROUP BY job_name ORDER BY 2 DESC, 1"
        )
        jobs = [
            (str(name), int(count), int(newest), int(oldest))
            for name, count, newest, oldest in cursor.fetchall()
        ]
        cursor.execute(
            "SELECT e.id, e.job_instance_id FROM ob_job_execution e "
            "WHERE EXISTS (SELECT 1 FROM ob_step_execution s "
            "WHERE s.job_execution_id = e.id) ORDER BY e.id DESC LIMIT 1"
        )
        with_steps = cursor.fetchone()
        if with_steps is None:
            return Landmarks(max_execution, max_instance, jobs, None, None, None)
        execution, instance = int(with_steps[0]), int(with_steps[1])
        cursor.execute(
            "SELECT id FROM ob_step_execution WHERE job_execution_id = %s "
            "ORDER BY id LIMIT 1",
            [execution],
        )
        step = int(cursor.fetchone()[0])
    return Landmarks(max_execution, max_instance, jobs, execution, instance, step)


def unresolved_executions(alias: str) -> int:
    """Count the unresolved executions on ``alias`` (once, for a report)."""
    marks = ", ".join(["%s"] * len(vocabulary.UNRESOLVED))
    with connections[alias].cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM ob_job_execution WHERE status IN ({marks})",
            list(vocabulary.UNRESOLVED),
        )
        return int(cursor.fetchone()[0])


def require_static_manifest() -> None:
    """
    Refuse to measure pages that cannot render their asset links.

    With DEBUG off (as production, and the benchmarks, run) ``{% static %}``
    looks each asset up in the manifest ``collectstatic`` writes.
    """
    try:
        staticfiles_storage.url("batchboard/batchboard.css")
    except ValueError as error:
        raise CommandError(
            "The static files manifest is missing, so pages cannot link their "
            "assets with DEBUG off: run python manage.py collectstatic --no-input "
            "first."
        ) from error


def measure(timers: Iterable[Timer], repeat: int) -> None:
    """Render every page ``repeat`` times, round-robin, after the warm rounds."""
    require_static_manifest()
    pages = list(timers)
    for round_number in range(repeat + WARM_ROUNDS):
        for timer in pages:
            timer.once(keep=round_number >= WARM_ROUNDS)


class BenchmarkCommand(BaseCommand):
    """A benchmark of pages on the metadata database (PostgreSQL or SQLite)."""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--depth",
            type=int,
            default=1_000_000,
            help="Rows deep for deep pages (capped at half the history; "
            "default 1000000).",
        )
        parser.add_argument(
            "--repeat", type=int, default=15, help="Renders per page (default 15)."
        )

    def write_table_head(
        self, repeat: int, page_size: int, header: str, detail: str = ""
    ) -> None:
        """Write what the medians are of, then the table's header and a rule."""
        self.stdout.write(
            f"\nMedian render time of {repeat} renders, page size {page_size}"
            f"{detail}.\n"
        )
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
