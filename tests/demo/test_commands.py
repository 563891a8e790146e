"""What the demo's commands share: option bounds, the seed option, the gate's note."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, load_command_class
from django.core.management.base import CommandParser

from batchboard.demo.commands import DemoCommand, add_seed_argument, check_bounds

GATED = (
    "batchboard_seed",
    "batchboard_simulate",
    "batchboard_example_job",
    "batchboard_demo_login",
    "batchboard_demo_alerts",
)
#: The benchmarks measure; only seeding (through batchboard_seed) writes.
UNGATED = (
    "batchboard_benchmark",
    "batchboard_benchmark_admin",
    "batchboard_benchmark_export",
)


def test_check_bounds_says_which_option_and_its_range() -> None:
    check_bounds("workers", 1, 1, 8)
    check_bounds("workers", 8, 1, 8)
    check_bounds("executions", 10**9, 1)
    with pytest.raises(CommandError, match=r"^--workers must be between 1 and 8\.$"):
        check_bounds("workers", 9, 1, 8)
    with pytest.raises(CommandError, match=r"^--executions must be at least 100\.$"):
        check_bounds("executions", 99, 100)
    with pytest.raises(
        CommandError, match=r"^--tick must be between 0\.01 and 60 seconds\.$"
    ):
        check_bounds("tick", 0.001, 0.01, 60, unit=" seconds")


def test_the_seed_option_is_an_integer_with_its_default() -> None:
    parser = CommandParser()
    add_seed_argument(parser, 2026)
    assert parser.parse_args([]).seed == 2026
    assert parser.parse_args(["--seed", "7"]).seed == 7
    assert "(default 2026)" in parser.format_help()
    unseeded = CommandParser()
    add_seed_argument(unseeded, None, of="Seed of the simulator")
    assert unseeded.parse_args([]).seed is None
    assert "default" not in unseeded.format_help()


@pytest.mark.parametrize("name", GATED)
def test_every_writer_is_gated_and_says_so(name: str) -> None:
    command = load_command_class("batchboard.demo", name)
    assert isinstance(command, DemoCommand)
    text = " ".join(command.create_parser("manage.py", name).format_help().split())
    assert "Demo only (BATCHBOARD_DEMO=1)." in text


@pytest.mark.parametrize("name", UNGATED)
def test_the_benchmarks_are_not_writers(name: str) -> None:
    assert not isinstance(load_command_class("batchboard.demo", name), DemoCommand)
