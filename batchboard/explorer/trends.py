"""
A job's recent history at a glance: the duration trend and the steps grid.

Both come from two bounded statements, whatever the history holds:

- :func:`recent_runs` reads the job's latest :data:`TREND_RUNS` executions
  (newest instance first, latest attempt first: the order the ``(job_name,
  id DESC)`` and ``(job_instance_id, attempt DESC)`` indexes yield).
- :func:`grid_steps` reads the steps of the newest :data:`GRID_RUNS` of
  them, partition workers left out, at most :data:`GRID_STEP_ROWS` rows.

:func:`trend` and :func:`grid` turn those rows into what the templates
place (``batchboard/partials/job_trend.html`` and ``job_grid.html``): bar
geometry in SVG user units, the median and p95 lines, and the grid's cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from django.db.models import QuerySet
from django.utils.html import escape
from django.utils.safestring import SafeString

from batchboard import db
from batchboard.explorer import overview
from batchboard.explorer.links import url_pattern
from batchboard.explorer.pagination import Row
from batchboard.explorer.presenters import Clock, duration_unknown, look, texts
from batchboard.explorer.stamps import Stamp, slot, stamp
from batchboard.models import StepExecution
from batchboard.vocabulary import (
    GRID_RUNS,
    GRID_STEP_ROWS,
    PARTITION_WORKER_PREFIX,
    TREND_RUNS,
    UNRESOLVED,
)

#: The trend's drawing area in SVG user units (the SVG scales to its box).
WIDTH: Final = 600
HEIGHT: Final = 120
_GAP: Final = 1.0
#: The scale's top is at most this many times the p95: one run far longer
#: than the rest is drawn clipped at the top (its title says by how much)
#: instead of flattening every other bar.
CLIP_FACTOR: Final = 1.5
#: Dates under the trend: at most this many, evenly spread over the runs.
AXIS_TICKS: Final = 5

# What the trend and the grid show of a run: its duration, status and link
# (no creation time: each timestamp read costs more than the rest of a row).
_RUN_COLUMNS = (
    "id",
    "status",
    "attempt",
    "job_instance_id",
    "started_at",
    "ended_at",
    # Whether the run reported its own end (presenters.duration_unknown).
    "exit_code",
)


def recent_runs(job_name: str, limit: int = TREND_RUNS) -> list[Row]:
    """Return a job's latest ``limit`` executions, newest first (one statement)."""
    return overview.latest_runs([job_name], limit, _RUN_COLUMNS)[job_name]


def grid_steps(execution_ids: Sequence[int]) -> list[Row]:
    """Return the steps of ``execution_ids`` without partition workers, newest first."""
    if not execution_ids:
        return []
    steps: QuerySet[Any] = (
        StepExecution.objects.using(db.read_alias())
        .filter(job_execution_id__in=list(execution_ids))
        # The grid shows a partitioned step itself, not its worker steps.
        .exclude(step_name__startswith=PARTITION_WORKER_PREFIX)
        # Newest run first, so the bound cuts the oldest runs' cells; the
        # (job_execution_id, id) index yields this order, nothing is sorted.
        .order_by("-job_execution_id", "-id")
        .values("id", "job_execution_id", "step_name", "status")
    )
    return list(steps[:GRID_STEP_ROWS])


# -- the trend --------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    """One execution's bar: SVG geometry, its tone, link and tooltip parts."""

    x: float
    y: float
    width: float
    height: float
    tone: str
    url: SafeString
    run: Row
    duration: SafeString
    #: Whether the run is longer than the scale (drawn to the top, marked).
    clipped: bool = False


@dataclass(frozen=True)
class Tick:
    """A date under the trend: the run it stands under and its start day."""

    run_id: int
    day: SafeString


@dataclass(frozen=True)
class Trend:
    """The trend's bars (oldest left) and its median and p95 lines."""

    bars: list[Bar]
    width: int = WIDTH
    height: int = HEIGHT
    median: SafeString | None = None
    p95: SafeString | None = None
    median_y: float | None = None
    p95_y: float | None = None
    scale: SafeString | None = None
    #: Runs without a duration yet (never started).
    unstarted: int = 0
    #: Runs whose duration is unknown (UNKNOWN, or their end declared).
    unknown: int = 0
    #: Runs longer than the scale, drawn clipped.
    clipped: int = 0
    #: The time axis: dates of evenly spread runs, oldest first.
    ticks: list[Tick] = field(default_factory=list)
    #: Every bar rendered (partials/trend_bar.html, one stamp per status).
    markup: SafeString = SafeString("")


def _seconds(run: Row, now: datetime) -> float | None:
    if run["started_at"] is None or duration_unknown(run):
        return None
    started: datetime = run["started_at"]
    ended: datetime = run["ended_at"] or now
    return max((ended - started).total_seconds(), 0.0)


def percentile(values: Sequence[float], fraction: float) -> float:
    """Return the nearest-rank percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def trend(runs: Sequence[Row], clock: Clock) -> Trend:
    """
    Lay out ``runs`` (newest first) as duration bars, oldest on the left.

    Bars are scaled to the longest finished run, but never above
    :data:`CLIP_FACTOR` times the p95: an outlier (or a running execution
    past the scale) is drawn to the top and marked clipped, its real
    duration in its title. The median and p95 are nearest-rank over the
    started runs. The axis dates :data:`AXIS_TICKS` runs spread evenly.
    """
    head, tail = url_pattern("batchboard:execution")
    ordered = list(reversed(runs))
    durations = [_seconds(run, clock.now) for run in ordered]
    measured = [value for value in durations if value is not None]
    if not ordered:
        return Trend([])
    unknown_text = texts()["unknown_duration"]
    unknown = sum(duration_unknown(run) for run in ordered)
    # Scaled to the longest finished run, so one long-running execution
    # does not flatten the rest; a bar over the scale is clipped at the top.
    finished = [
        value
        for run, value in zip(ordered, durations, strict=True)
        if value is not None and run["ended_at"] is not None
    ]
    top = max(finished or measured, default=0.0) or 1.0
    median = p95 = None
    if measured:
        median, p95 = percentile(measured, 0.5), percentile(measured, 0.95)
        if p95 > 0:
            top = min(top, p95 * CLIP_FACTOR)
    slot = WIDTH / max(len(ordered), 1)
    bars = []
    for index, (run, seconds) in enumerate(zip(ordered, durations, strict=True)):
        height = (
            0.0 if seconds is None else min(max(HEIGHT * seconds / top, 1.0), HEIGHT)
        )
        bars.append(
            Bar(
                x=round(index * slot + _GAP / 2, 2),
                y=round(HEIGHT - height, 2),
                width=round(max(slot - _GAP, 0.5), 2),
                height=round(height, 2),
                tone=str(look(run["status"]).tone),
                url=SafeString(f"{head}{int(run['id'])}{tail}"),
                run=run,
                duration=(
                    unknown_text
                    if duration_unknown(run)
                    else clock.duration(run["started_at"], run["ended_at"])
                ),
                clipped=seconds is not None and seconds > top,
            )
        )
    scale = clock.span(top)
    markup = _bars_markup(bars, head, tail, scale)
    ticks = _ticks(ordered, clock)
    if median is None or p95 is None:
        return Trend(
            bars,
            unstarted=len(ordered) - unknown,
            unknown=unknown,
            markup=markup,
            ticks=ticks,
        )
    return Trend(
        bars,
        median=clock.span(median),
        p95=clock.span(p95),
        median_y=round(max(HEIGHT - HEIGHT * median / top, 0.0), 2),
        p95_y=round(max(HEIGHT - HEIGHT * p95 / top, 0.0), 2),
        scale=scale,
        unstarted=len(ordered) - len(measured) - unknown,
        unknown=unknown,
        clipped=sum(bar.clipped for bar in bars),
        markup=markup,
        ticks=ticks,
    )


def _ticks(ordered: Sequence[Row], clock: Clock) -> list[Tick]:
    """Return the axis: the start day of up to AXIS_TICKS evenly spread runs."""
    count = min(AXIS_TICKS, len(ordered))
    if count == 1:
        positions = [0]
    else:
        last = len(ordered) - 1
        positions = sorted({round(n * last / (count - 1)) for n in range(count)})
    ticks = []
    for position in positions:
        run = ordered[position]
        ticks.append(Tick(int(run["id"]), clock.day(run["started_at"])))
    return ticks


def _bars_markup(
    bars: Sequence[Bar], head: str, tail: str, scale: SafeString
) -> SafeString:
    """Render the bars, each from its status's (and clipping's) stamp of trend_bar.html."""
    stamps: dict[tuple[str, bool], Stamp] = {}
    placed = []
    for bar in bars:
        status = bar.run["status"]
        drawn = stamps.get((status, bar.clipped))
        if drawn is None:
            drawn = stamps[(status, bar.clipped)] = stamp(
                "batchboard/partials/trend_bar.html",
                {
                    "tone": bar.tone,
                    "status": status,
                    "clipped": bar.clipped,
                    "scale": scale,
                    "url": SafeString(f"{head}{slot(0)}{tail}"),
                    "id": slot(0),
                    "x": slot(1),
                    "y": slot(2),
                    "width": slot(3),
                    "height": slot(4),
                    "duration": slot(5),
                    "attempt": slot(6),
                },
                7,
            )
        placed.append(
            drawn.fill(
                int(bar.run["id"]),
                bar.x,
                bar.y,
                bar.width,
                bar.height,
                bar.duration,
                int(bar.run["attempt"]),
            )
        )
    # Filled with numbers and escaped spans only.
    return SafeString("".join(placed))


# -- the grid ---------------------------------------------------------------------


@dataclass
class GridRow:
    """One step name and its cell per run (``None`` where it did not run)."""

    name: str
    cells: list[Row | None] = field(default_factory=list)
    #: The row's cells rendered (partials/grid_cell.html, grid_gap.html).
    markup: SafeString = SafeString("")


@dataclass(frozen=True)
class Grid:
    """The grid's runs (oldest left, as the trend) and one row per step name."""

    runs: list[Row]
    rows: list[GridRow]
    #: Whether the step rows hit GRID_STEP_ROWS (some cells may be missing).
    truncated: bool = False


def grid(runs: Sequence[Row], steps: Sequence[Row], clock: Clock | None = None) -> Grid:
    """
    Place each run's steps in a steps x runs grid.

    Step names are ordered by their first appearance (the lowest step id);
    a name run twice in one execution shows its latest step. Each run (a
    column) carries its start day for its label.
    """
    clock = clock or Clock()
    run_head, run_tail = url_pattern("batchboard:execution")
    step_head, step_tail = url_pattern("batchboard:step")
    columns = list(reversed(runs))
    index = {int(run["id"]): position for position, run in enumerate(columns)}
    shown = [
        {
            **run,
            "url": SafeString(f"{run_head}{int(run['id'])}{run_tail}"),
            "tone": look(run["status"]).tone,
            "day": clock.day(run["started_at"]),
        }
        for run in columns
    ]
    rows: dict[str, GridRow] = {}
    first: dict[str, int] = {}
    for step in steps:
        name, pk = step["step_name"], int(step["id"])
        row = rows.get(name)
        if row is None:
            row = rows[name] = GridRow(name, [None] * len(columns))
        first[name] = min(first.get(name, pk), pk)
        position = index[int(step["job_execution_id"])]
        placed = row.cells[position]
        if placed is None or int(placed["id"]) < pk:
            # A step its finished run left unresolved is not running.
            left = (
                step["status"] in UNRESOLVED
                and columns[position]["status"] not in UNRESOLVED
            )
            row.cells[position] = {
                **step,
                "url": SafeString(f"{step_head}{pk}{step_tail}"),
                "tone": "muted" if left else look(step["status"]).tone,
            }
    ordered = sorted(rows.values(), key=lambda row: first[row.name])
    gap = stamp("batchboard/partials/grid_gap.html", {}, 0).fill()
    cells: dict[tuple[str, str], Stamp] = {}
    cell_url = SafeString(f"{step_head}{slot(0)}{step_tail}")
    for row in ordered:
        name = escape(row.name)
        markup = []
        for cell in row.cells:
            if cell is None:
                markup.append(gap)
                continue
            status = cell["status"]
            drawn = cells.get((status, cell["tone"]))
            if drawn is None:
                drawn = cells[(status, cell["tone"])] = stamp(
                    "batchboard/partials/grid_cell.html",
                    {
                        "tone": cell["tone"],
                        "status": status,
                        "url": cell_url,
                        "name": slot(1),
                        "execution": slot(2),
                    },
                    3,
                )
            markup.append(
                drawn.fill(int(cell["id"]), name, int(cell["job_execution_id"]))
            )
        # Filled with ids and the escaped step name only.
        row.markup = SafeString("".join(markup))
    return Grid(shown, ordered, len(steps) >= GRID_STEP_ROWS)


def job_history(job_name: str, clock: Clock, *, steps: bool = True) -> dict[str, Any]:
    """
    Return the job page's trend and grid (two statements).

    Without ``steps`` (a reader who may not view steps) the grid is neither
    read nor returned: one statement.
    """
    runs = recent_runs(job_name)
    if not steps:
        return {"trend": trend(runs, clock), "grid": None}
    newest = runs[:GRID_RUNS]
    rows = grid_steps([int(run["id"]) for run in newest])
    return {"trend": trend(runs, clock), "grid": grid(newest, rows, clock)}
