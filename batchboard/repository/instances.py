"""
Job instances: one per job name and identifying parameters (spec 7.1, 7.2).

The instance key is the version-1 key of :func:`batchboard.digests.instance_key`;
the stored ``identifying_parameters`` is the parameter envelope, which each
execution copies into its ``parameters`` column.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batchboard import digests
from batchboard.digests import JobParameter
from batchboard.models import JobInstance
from batchboard.repository.base import RepositoryBase
from batchboard.repository.errors import InvalidArgument
from batchboard.repository.validation import check_name, check_payload

Parameters = Mapping[str, JobParameter]


def instance_identity(
    job_name: str, parameters: Parameters
) -> tuple[bytes, dict[str, Any]]:
    """Return the instance key and parameter envelope, validating both."""
    check_name(job_name, "job name")
    for name, parameter in parameters.items():
        check_name(name, "parameter name")
        if not isinstance(parameter, JobParameter):
            raise InvalidArgument(f"parameter {name!r} is not a JobParameter")
    try:
        key = digests.instance_key(job_name, parameters)
    except digests.ParameterError as error:
        raise InvalidArgument(str(error)) from None
    envelope = check_payload(
        digests.parameters_json(parameters), "identifying parameters"
    )
    return key, envelope


class InstancesMixin(RepositoryBase):
    def get_or_create_instance(
        self, job_name: str, parameters: Parameters | None = None
    ) -> JobInstance:
        """
        Return the instance of ``job_name`` with these identifying parameters.

        Creates it on first use; concurrent callers with the same identity
        all get the one row.
        """
        with self.unit():
            return self._select_or_create_instance(job_name, parameters or {})

    def find_instance(
        self, job_name: str, parameters: Parameters | None = None
    ) -> JobInstance | None:
        """Return the instance with this identity, or ``None``."""
        key, _ = instance_identity(job_name, parameters or {})
        return (
            JobInstance.objects.using(self.alias)
            .filter(job_name=job_name, instance_key=key)
            .first()
        )

    def get_instance(self, instance_id: int) -> JobInstance:
        """Return instance ``instance_id`` or raise :class:`JobInstanceNotFound`."""
        return self._row(JobInstance, instance_id)

    def _select_or_create_instance(
        self, job_name: str, parameters: Parameters
    ) -> JobInstance:
        key, envelope = instance_identity(job_name, parameters)
        instances = JobInstance.objects.using(self.alias)
        existing = instances.filter(job_name=job_name, instance_key=key).first()
        if existing is not None:
            return existing
        created = self._insert(
            JobInstance,
            job_name=job_name,
            instance_key=key,
            identifying_parameters=envelope,
            created_at=self.now(),
        )
        # None: a concurrent launch created it first; its row is committed
        # now (the unique index made this insert wait for that commit).
        return created or instances.get(job_name=job_name, instance_key=key)
