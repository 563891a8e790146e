"""
What each operator action will do, and where its outcome is audited.

The dashboard's confirmation dialogs and the admin's confirmation pages
both tell the operator what an action will do before it runs; both take the
sentence from :data:`CONSEQUENCES`, so an action is described in one
wording wherever it is offered. The sentences speak of one execution or one
instance: the admin shows them once for all the objects it lists.

:func:`audit_url` links an outcome to the audit row that records it, in the
admin, for both front ends.
"""

from __future__ import annotations

from typing import Any, Final

from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext_lazy as _

from batchboard import vocabulary
from batchboard.actions import ActionResult

__all__ = ["CONSEQUENCES", "audit_row_url", "audit_url", "consequence"]

#: What an action will do, told before it runs.
CONSEQUENCES: Final[dict[str, Any]] = {
    vocabulary.STOP: _(
        "A stop request is recorded on the execution. Its owning process sees "
        "it at its next commit or poll and moves it to STOPPING, then STOPPED; "
        "without a live owner nothing moves (recover it instead). Stopping a "
        "STOPPING or finished execution changes nothing."
    ),
    vocabulary.ABANDON: _(
        "The execution becomes ABANDONED, which is final: its instance can "
        "never be restarted again. Its failure and end time are kept."
    ),
    vocabulary.HOLD: _(
        "Purges skip the instance and all its executions until the hold is "
        "released. Nothing else changes: it can still run and restart. An "
        "existing hold is replaced by yours."
    ),
    vocabulary.RELEASE_HOLD: _(
        "Purges may delete the instance's history again once it is old "
        "enough. The release is recorded even if no hold is in place."
    ),
    vocabulary.APPLY_PURGE: _(
        "Applying deletes exactly these rows, in one transaction, after "
        "checking that none of them changed."
    ),
}


def consequence(action: str) -> str:
    """Return what ``action`` will do, in the active language."""
    return str(CONSEQUENCES[action])


def audit_url(result: ActionResult) -> str | None:
    """
    Return the admin page of the audit row recording ``result``.

    Return None where the admin is not installed, so the outcome names its
    audit row without a link.
    """
    return audit_row_url(result.audit_model, result.audit_id)


def audit_row_url(model: str, ident: int) -> str | None:
    """Return the admin page of audit row ``ident`` of ``model``, or None."""
    try:
        return reverse(f"admin:batchboard_{model}_change", args=[ident])
    except NoReverseMatch:
        return None
