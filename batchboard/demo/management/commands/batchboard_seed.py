"""``manage.py batchboard_seed``: demo history, or a bulk load for benchmarks."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from batchboard.demo import bulk, seed
from batchboard.demo.commands import DemoCommand, add_seed_argument, check_bounds
from batchboard.models import JobExecution


class Command(DemoCommand):
    help = (
        "Seed realistic, deterministic oxide-batch history through the job "
        "repository, or (--bulk) append many finished executions fast."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_seed_argument(parser, 2026)
        parser.add_argument(
            "--instances",
            type=int,
            default=None,
            help=f"Job instances to seed (default {seed.DEFAULT_INSTANCES}).",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="Seed even when the database already holds history.",
        )
        parser.add_argument(
            "--bulk",
            action="store_true",
            help="Append finished executions in bulk (COPY on PostgreSQL).",
        )
        parser.add_argument(
            "--no-flow-decisions",
            action="store_true",
            help="Bulk mode: leave out flow decisions (executions and steps only).",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=2,
            help="Bulk mode on PostgreSQL: parallel COPY connections (default 2).",
        )
        parser.add_argument(
            "--executions",
            type=int,
            default=None,
            help="Executions to append in bulk mode (default 100000).",
        )

    def run(self, **options: Any) -> None:
        if options["bulk"]:
            if options["instances"] is not None:
                raise CommandError("--instances applies to demo seeding, not --bulk.")
            self._bulk(options)
            return
        if options["executions"] is not None:
            raise CommandError("--executions applies only with --bulk.")
        self._seed(options)

    def _bulk(self, options: dict[str, Any]) -> None:
        executions = options["executions"] or 100_000
        verbosity = options["verbosity"]
        check_bounds("executions", executions, 1)
        check_bounds("workers", options["workers"], 1, 8)

        def progress(report: bulk.BulkReport) -> None:
            if verbosity >= 2:
                self.stdout.write(
                    f"  {report.executions} executions, {report.rate:,.0f}/s"
                )

        report = bulk.bulk_load(
            executions,
            seed=options["seed"],
            workers=options["workers"],
            flow_decisions=not options["no_flow_decisions"],
            progress=progress,
        )
        self.stdout.write(
            f"Loaded {report.rows:,} rows: {report.instances:,} instances, "
            f"{report.executions:,} executions, {report.steps:,} steps, "
            f"{report.flow_decisions:,} flow decisions in {report.seconds:.1f} s "
            f"({report.rate:,.0f} executions/s)."
        )

    def _seed(self, options: dict[str, Any]) -> None:
        alias = self.target_alias()
        if JobExecution.objects.using(alias).exists() and not options["force"]:
            raise CommandError(
                "The metadata database already holds job history; "
                "batchboard_seed leaves it alone. Pass --force to add demo "
                "history anyway."
            )
        instances = options["instances"] or seed.DEFAULT_INSTANCES
        check_bounds("instances", instances, 1)
        report = seed.seed(instances=instances, seed=options["seed"], using=alias)
        self.stdout.write(report.summary())
