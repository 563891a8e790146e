"""
Job definitions and their upgrade edges (spec 2.3).

A definition is a job's revision plus its canonical manifest; the SHA-256
of the canonical bytes is the manifest digest, which flow decisions carry
as their plan fingerprint. Definitions are registered idempotently: the
same revision and manifest resolve to the same row, and a revision reused
with another manifest is drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from batchboard import digests
from batchboard.models import DefinitionUpgrade, JobDefinition
from batchboard.repository.base import RepositoryBase
from batchboard.repository.errors import (
    DefinitionDrift,
    DefinitionJobMismatch,
    DefinitionNotFound,
    DefinitionUpgradeConflict,
    InvalidArgument,
    InvalidDefinitionUpgrade,
    UnsupportedManifestVersion,
)
from batchboard.repository.validation import check_name, json_size

MANIFEST_LIMIT = 65_536
MANIFEST_FORMATS = (1, 2, 3)


@dataclass(frozen=True)
class Definition:
    """
    A job definition as a runtime presents it: a revision and a manifest.

    ``manifest`` is a JSON object without floats; its ``format`` (1 one-step,
    2 flow, 3 local-scale) and, when present, its ``job`` name are checked at
    registration. :meth:`legacy` is the identity oxide-batch records when a
    launch names no definition.
    """

    revision: str
    manifest: Mapping[str, Any] = field(hash=False)

    @classmethod
    def legacy(cls) -> Definition:
        return cls(digests.LEGACY_REVISION, dict(digests.LEGACY_MANIFEST))

    @property
    def manifest_format(self) -> object:
        return self.manifest.get("format")

    @property
    def job_name(self) -> str | None:
        job = self.manifest.get("job")
        return job if isinstance(job, str) else None

    def canonical_manifest(self) -> bytes:
        try:
            return digests.canonical_json(self.manifest)
        except (TypeError, ValueError):
            raise InvalidArgument("the manifest is not canonical JSON") from None

    @property
    def digest(self) -> bytes:
        return digests.sha256(self.canonical_manifest())


class DefinitionsMixin(RepositoryBase):
    def register_definition(
        self, job_name: str, definition: Definition
    ) -> JobDefinition:
        """
        Register ``definition`` for ``job_name`` and return its row.

        Idempotent for an identical revision and manifest. Raises
        :class:`DefinitionJobMismatch` when the manifest names another job,
        :class:`UnsupportedManifestVersion` for a format outside 1..3 and
        :class:`DefinitionDrift` when the revision (or the manifest) is
        already registered with a different counterpart.
        """
        with self.unit():
            return self._ensure_definition(job_name, definition)

    def _ensure_definition(
        self, job_name: str, definition: Definition
    ) -> JobDefinition:
        check_name(job_name, "job name")
        actual = definition.job_name
        if actual is not None and actual != job_name:
            raise DefinitionJobMismatch(job_name, actual)
        manifest_format = definition.manifest_format
        if isinstance(manifest_format, bool) or manifest_format not in MANIFEST_FORMATS:
            raise UnsupportedManifestVersion(manifest_format)
        check_name(definition.revision, "definition revision")
        canonical = definition.canonical_manifest()
        if len(canonical) > MANIFEST_LIMIT:
            raise InvalidArgument(f"a manifest is at most {MANIFEST_LIMIT} bytes")
        digest = digests.sha256(canonical)
        # The digest decides identity; a different revision string for the
        # same manifest still resolves to the registered row, as the
        # insert-or-ignore of oxide-batch does.
        registered = JobDefinition.objects.using(self.alias).filter(
            job_name=job_name, manifest_digest=digest
        )
        existing = registered.first() or self._insert(
            JobDefinition,
            job_name=job_name,
            definition_revision=definition.revision,
            manifest_format=manifest_format,
            manifest_digest=digest,
            manifest=dict(definition.manifest),
            registered_at=self.now(),
        )
        if existing is None:
            # Refused: a concurrent writer registered this manifest, or the
            # revision names another manifest (drift).
            existing = registered.first()
        if existing is None:
            raise DefinitionDrift(job_name, definition.revision)
        return existing

    def register_upgrade(
        self,
        from_definition_id: int,
        to_definition_id: int,
        *,
        upgrade_key: str,
        step_mapping: Mapping[str, str],
    ) -> DefinitionUpgrade:
        """
        Register the directed upgrade edge ``from -> to`` and return it.

        ``step_mapping`` maps each step of the old definition whose state
        carries over to its step in the new one; it must be non-empty with
        unique targets. Re-registering the same edge with the same key and
        mapping is a no-op; with another key or mapping it raises
        :class:`DefinitionUpgradeConflict`, as does a key the target already
        uses for another edge.
        """
        check_name(upgrade_key, "upgrade key")
        mapping = dict(step_mapping)
        if not mapping:
            raise InvalidDefinitionUpgrade("the step mapping is empty")
        for source, target in mapping.items():
            if not isinstance(target, str):
                raise InvalidDefinitionUpgrade("step mapping targets are step names")
            check_name(source, "step name")
            check_name(target, "step name")
        if len(set(mapping.values())) != len(mapping):
            raise InvalidDefinitionUpgrade("two steps map to the same target step")
        if json_size(mapping) > MANIFEST_LIMIT:
            raise InvalidArgument(f"a step mapping is at most {MANIFEST_LIMIT} bytes")
        with self.unit():
            definitions = JobDefinition.objects.using(self.alias)
            rows = {
                row.id: row
                for row in definitions.filter(
                    id__in=[from_definition_id, to_definition_id]
                )
            }
            for wanted in (from_definition_id, to_definition_id):
                if wanted not in rows:
                    raise DefinitionNotFound(wanted)
            old, new = rows[from_definition_id], rows[to_definition_id]
            if old.job_name != new.job_name:
                raise InvalidDefinitionUpgrade(
                    "the definitions belong to different jobs"
                )
            if bytes(old.manifest_digest) == bytes(new.manifest_digest):
                raise InvalidDefinitionUpgrade("the definitions have the same manifest")
            edge = DefinitionUpgrade.objects.using(self.alias).filter(
                from_definition_id=from_definition_id, to_definition_id=to_definition_id
            )
            existing = edge.first() or self._insert(
                DefinitionUpgrade,
                from_definition_id=from_definition_id,
                to_definition_id=to_definition_id,
                upgrade_key=upgrade_key,
                step_mapping=mapping,
                registered_at=self.now(),
            )
            if existing is None:
                # Refused: a concurrent writer registered the edge, or the
                # key names another edge into the target.
                existing = edge.first()
            if (
                existing is None
                or existing.upgrade_key != upgrade_key
                or existing.step_mapping != mapping
            ):
                raise DefinitionUpgradeConflict(from_definition_id, to_definition_id)
            return existing
