from __future__ import annotations

import pytest

from batchboard import digests
from batchboard.models import DefinitionUpgrade, JobDefinition
from batchboard.repository import (
    Definition,
    DefinitionDrift,
    DefinitionJobMismatch,
    DefinitionNotFound,
    DefinitionUpgradeConflict,
    InvalidArgument,
    InvalidDefinitionUpgrade,
    JobRepository,
    UnsupportedManifestVersion,
)

pytestmark = pytest.mark.django_db

# Manifest T of spec 8.2 and its digest.
MANIFEST_T = {
    "component": {"tasklet": "load-tasklet-1"},
    "delivery_mode": "best_effort",
    "format": 1,
    "job": "nightly-import",
    "kind": "tasklet",
    "restart_state": "none",
    "step": "load",
    "transaction_boundary": "tasklet_completion",
}
DIGEST_T = "5cc351a4dbe16355e5e61e6cddb33b30c8544f0c37d3d7948c187361279c49a2"


def manifest(step: str = "load", job: str = "nightly-import") -> dict[str, object]:
    return {**MANIFEST_T, "step": step, "job": job}


def test_register_stores_canonical_digest(repo: JobRepository) -> None:
    """The stored digest is the manifest digest of the canonical bytes."""
    row = repo.register_definition("nightly-import", Definition("v1", MANIFEST_T))
    assert bytes(row.manifest_digest).hex() == DIGEST_T
    assert row.manifest_format == 1
    assert row.definition_revision == "v1"
    assert row.registered_at == repo.now()


def test_register_is_idempotent(repo: JobRepository) -> None:
    first = repo.register_definition("nightly-import", Definition("v1", MANIFEST_T))
    second = repo.register_definition("nightly-import", Definition("v1", MANIFEST_T))
    assert first.pk == second.pk
    assert JobDefinition.objects.count() == 1


def test_revision_with_other_manifest_is_drift(repo: JobRepository) -> None:
    repo.register_definition("nightly-import", Definition("v1", MANIFEST_T))
    with pytest.raises(DefinitionDrift) as caught:
        repo.register_definition("nightly-import", Definition("v1", manifest("other")))
    assert caught.value.revision == "v1"
    assert "step" not in str(caught.value)


def test_manifest_for_another_job_is_a_mismatch(repo: JobRepository) -> None:
    with pytest.raises(DefinitionJobMismatch) as caught:
        repo.register_definition("other-job", Definition("v1", MANIFEST_T))
    assert (caught.value.expected, caught.value.actual) == (
        "other-job",
        "nightly-import",
    )


@pytest.mark.parametrize("fmt", [0, 4, "1", True, None])
def test_manifest_format_outside_1_to_3_is_unsupported(
    repo: JobRepository, fmt: object
) -> None:
    with pytest.raises(UnsupportedManifestVersion):
        repo.register_definition(
            "nightly-import", Definition("v1", {**MANIFEST_T, "format": fmt})
        )


def test_float_in_manifest_is_refused(repo: JobRepository) -> None:
    with pytest.raises(InvalidArgument):
        repo.register_definition("j", Definition("v1", {"format": 1, "ratio": 0.5}))


def test_legacy_definition_has_the_legacy_digest(repo: JobRepository) -> None:
    row = repo.register_definition("m5_upgrade", Definition.legacy())
    assert bytes(row.manifest_digest).hex() == (
        "1b6a802e60d288646da5fadc6835b3cdf990b322ef1e6b25f2c00000f8a6034e"
    )
    assert row.definition_revision == digests.LEGACY_REVISION


def two_definitions(repo: JobRepository) -> tuple[int, int]:
    one = repo.register_definition("nightly-import", Definition("v1", manifest("load")))
    two = repo.register_definition(
        "nightly-import", Definition("v2", manifest("import"))
    )
    return one.pk, two.pk


def test_upgrade_edge_is_registered_once(repo: JobRepository) -> None:
    one, two = two_definitions(repo)
    edge = repo.register_upgrade(
        one, two, upgrade_key="rename", step_mapping={"load": "import"}
    )
    again = repo.register_upgrade(
        one, two, upgrade_key="rename", step_mapping={"load": "import"}
    )
    assert (edge.step_mapping, again.step_mapping) == (
        {"load": "import"},
        {"load": "import"},
    )
    assert DefinitionUpgrade.objects.count() == 1


@pytest.mark.parametrize(
    ("key", "mapping"),
    [("other", {"load": "import"}), ("rename", {"report": "import"})],
)
def test_upgrade_edge_with_other_key_or_mapping_conflicts(
    repo: JobRepository, key: str, mapping: dict[str, str]
) -> None:
    one, two = two_definitions(repo)
    repo.register_upgrade(
        one, two, upgrade_key="rename", step_mapping={"load": "import"}
    )
    with pytest.raises(DefinitionUpgradeConflict):
        repo.register_upgrade(one, two, upgrade_key=key, step_mapping=mapping)


def test_upgrade_key_is_unique_per_target(repo: JobRepository) -> None:
    one, two = two_definitions(repo)
    three = repo.register_definition(
        "nightly-import", Definition("v3", manifest("x"))
    ).pk
    repo.register_upgrade(one, two, upgrade_key="k", step_mapping={"load": "import"})
    with pytest.raises(DefinitionUpgradeConflict):
        repo.register_upgrade(three, two, upgrade_key="k", step_mapping={"x": "import"})


@pytest.mark.parametrize(
    "mapping", [{}, {"a": "import", "b": "import"}, {"load": 3}, {" load": "import"}]
)
def test_invalid_step_mappings_are_refused(
    repo: JobRepository, mapping: dict[str, object]
) -> None:
    one, two = two_definitions(repo)
    with pytest.raises((InvalidDefinitionUpgrade, InvalidArgument)):
        repo.register_upgrade(one, two, upgrade_key="k", step_mapping=mapping)  # type: ignore[arg-type]


def test_upgrade_needs_distinct_existing_definitions_of_one_job(
    repo: JobRepository,
) -> None:
    one, two = two_definitions(repo)
    other = repo.register_definition(
        "other", Definition("v1", manifest(job="other"))
    ).pk
    with pytest.raises(InvalidDefinitionUpgrade):
        repo.register_upgrade(one, one, upgrade_key="k", step_mapping={"load": "load"})
    with pytest.raises(InvalidDefinitionUpgrade):
        repo.register_upgrade(
            one, other, upgrade_key="k", step_mapping={"load": "load"}
        )
    with pytest.raises(DefinitionNotFound):
        repo.register_upgrade(one, 999_999, upgrade_key="k", step_mapping={"load": "x"})
