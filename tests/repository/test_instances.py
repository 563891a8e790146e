from __future__ import annotations

import pytest

from batchboard.models import JobInstance
from batchboard.repository import (
    InvalidArgument,
    JobInstanceNotFound,
    JobParameter,
    JobRepository,
)

pytestmark = pytest.mark.django_db

KEY_N = "b785f7bdf7b10200a282d461cbef5ce87e136712a510795f06490b8adbcc2899"


def test_instance_uses_the_v1_key_and_envelope(repo: JobRepository) -> None:
    instance = repo.get_or_create_instance(
        "nightly-import", {"run_date": JobParameter.string("2026-01-01")}
    )
    assert bytes(instance.instance_key).hex() == KEY_N
    assert instance.identifying_parameters == {
        "run_date": {"type": "string", "identifying": True, "value": "2026-01-01"}
    }
    assert instance.created_at == repo.now()
    assert instance.hold_actor is None


def test_same_identity_selects_the_same_instance(repo: JobRepository) -> None:
    first = repo.get_or_create_instance("j", {"n": JobParameter.i64(1)})
    second = repo.get_or_create_instance("j", {"n": JobParameter.i64(1)})
    third = repo.get_or_create_instance("j", {"n": JobParameter.i64(2)})
    assert first.pk == second.pk != third.pk
    assert repo.find_instance("j", {"n": JobParameter.i64(2)}).pk == third.pk  # type: ignore[union-attr]
    assert repo.find_instance("j", {"n": JobParameter.i64(3)}) is None
    assert JobInstance.objects.count() == 2


@pytest.mark.parametrize("name", ["", " padded", "x" * 129, "tab\tname"])
def test_bad_job_names_are_refused(repo: JobRepository, name: str) -> None:
    with pytest.raises(InvalidArgument):
        repo.get_or_create_instance(name)


def test_bad_parameter_is_refused_without_its_value(repo: JobRepository) -> None:
    with pytest.raises(InvalidArgument) as caught:
        repo.get_or_create_instance("j", {"secret": "hunter2"})  # type: ignore[dict-item]
    assert "hunter2" not in str(caught.value)


def test_missing_instance(repo: JobRepository) -> None:
    with pytest.raises(JobInstanceNotFound):
        repo.get_instance(424242)
