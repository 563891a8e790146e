"""The standalone site's one table (:mod:`batchboard.site.throttle`)."""

from __future__ import annotations

from django.db import models


class SignInCount(models.Model):
    """
    Failed sign-ins of one key (a user name from one address, or an address).

    ``key`` is a digest: the table names no user and no address. A row whose
    ``expires`` has passed counts as absent.
    """

    key = models.CharField(primary_key=True, max_length=80)
    failures = models.PositiveIntegerField(default=0)
    #: No attempt under this key is checked before then.
    not_before = models.DateTimeField()
    expires = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "sign-in count"

    def __str__(self) -> str:
        return self.key
