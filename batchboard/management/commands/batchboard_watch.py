"""Run the alert detector and deliveries until SIGTERM (batchboard.alerts.watch)."""

from __future__ import annotations

import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from batchboard.alerts.watch import Watch, default_jobs


class Command(BaseCommand):
    help = (
        "Detect alert events and deliver them, every ALERTS_CYCLE_SECONDS, "
        "until SIGTERM or SIGINT."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--every",
            type=float,
            default=None,
            help="Seconds between detector cycles (default: ALERTS_CYCLE_SECONDS).",
        )
        parser.add_argument(
            "--cycles",
            type=int,
            default=None,
            help="Stop after this many rounds (default: run until signalled).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        every = options["every"]
        if every is not None and every <= 0:
            self.stderr.write("--every must be a positive number of seconds.")
            raise SystemExit(2)
        watch = Watch(default_jobs(every), say=self._say)

        def stop(signum: int, frame: object) -> None:
            watch.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self._say("watching: detector and deliveries")
        watch.run(options["cycles"])
        self._say("stopped")

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()
