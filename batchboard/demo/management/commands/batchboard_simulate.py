"""``manage.py batchboard_simulate``: keep a handful of demo jobs running."""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from django.core.management.base import CommandParser

from batchboard.demo.commands import DemoCommand, add_seed_argument, check_bounds
from batchboard.demo.simulate import Simulator


class Command(DemoCommand):
    help = (
        "Run a few demo jobs through the job repository until interrupted: "
        "chunk commits, partitions, flow decisions, failures and restarts, "
        "one vanished process, and stop requests honoured on every running "
        "execution, the seeded ones included."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--tick", type=float, default=1.0, help="Seconds between ticks (default 1)."
        )
        parser.add_argument(
            "--max-seconds",
            type=float,
            default=None,
            help="Stop after this many seconds (default: run until interrupted).",
        )
        add_seed_argument(parser, None)
        parser.add_argument(
            "--concurrency",
            type=int,
            default=4,
            help="Jobs running at once (default 4, at most 16).",
        )

    def run(self, **options: Any) -> None:
        tick = options["tick"]
        check_bounds("tick", tick, 0.01, 60, unit=" seconds")
        check_bounds("concurrency", options["concurrency"], 1, 16)
        stopping = False

        def interrupt(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        previous = {
            sig: signal.signal(sig, interrupt)
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        simulator = Simulator(
            seed=options["seed"],
            concurrency=options["concurrency"],
            say=self.stdout.write,
        )
        self.stdout.write("Simulating demo jobs; press Ctrl-C to stop.")
        try:
            simulator.run(
                tick=tick,
                max_seconds=options["max_seconds"],
                should_stop=lambda: stopping,
            )
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write(
            f"Stopped after {simulator.launches} launches; "
            f"{len(simulator.active)} jobs left running."
        )
