"""What the demo's management commands share: the gate and option bounds."""

from __future__ import annotations

import abc
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from batchboard import conf
from batchboard.demo.gate import VARIABLE, require_demo


def add_seed_argument(
    parser: CommandParser, default: int | None, *, of: str = "Random seed"
) -> None:
    """Add ``--seed``: the one number that makes a run repeatable."""
    said = f" (default {default})" if default is not None else ""
    parser.add_argument("--seed", type=int, default=default, help=f"{of}{said}.")


def check_bounds(
    option: str,
    value: float,
    low: float,
    high: float | None = None,
    *,
    unit: str = "",
) -> None:
    """Raise :class:`CommandError` unless ``low <= value`` (``<= high``)."""
    if high is None:
        if value < low:
            raise CommandError(f"--{option} must be at least {low}.")
    elif not low <= value <= high:
        raise CommandError(f"--{option} must be between {low} and {high}{unit}.")


class DemoCommand(BaseCommand, abc.ABC):
    """
    A demo command that writes: it runs only behind the demo gate.

    Subclasses implement :meth:`run`; ``handle`` passes the gate first, so
    nothing (no read, no write, no migration) happens outside the demo.
    """

    def create_parser(
        self, prog_name: str, subcommand: str, **kwargs: Any
    ) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # Every demo command's help says, in one place, what lets it run.
        parser.description = f"{self.help} Demo only ({VARIABLE}=1)."
        return parser

    def target_alias(self) -> str:
        """Return the alias the command writes to: the metadata database."""
        return conf.database_alias()

    def handle(self, *args: Any, **options: Any) -> None:
        # A command is named after its module, as Django finds it.
        require_demo(self.__module__.rpartition(".")[2], self.target_alias())
        self.run(**options)

    @abc.abstractmethod
    def run(self, **options: Any) -> None:
        """Do the command's work; only ever called in the demo."""
