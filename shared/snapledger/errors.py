"""The one error hierarchy of snapledger.

Every message says what is wrong and what to do about it; adapters translate SDK errors
into these with ``raise ... from exc`` so callers never see a botocore exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: A field value a suggestion leaves for the user to fill in (a console payload writes it
#: ``[...]``, the CLI ``0,1,...``).
SOME_PARTITIONS = "[...]"


@dataclass(frozen=True)
class Suggestion:
    """A console payload an error's message suggests sending next, as data: the function
    that takes it, its action and fields. The CLI writes it as its own command from these;
    the console reads ``text``, the form the message writes it in."""

    function: str
    action: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def payload(self) -> dict[str, Any]:
        return {"action": self.action, **self.fields}

    @property
    def text(self) -> str:
        """The payload as JSON, a value left to fill in written as it is (``[...]``)."""
        pairs = (
            f"{json.dumps(key)}: {value if value == SOME_PARTITIONS else json.dumps(value)}"
            for key, value in self.payload.items()
        )
        return "{" + ", ".join(pairs) + "}"

    def as_data(self) -> dict[str, Any]:
        return {"function": self.function, "payload": self.payload, "text": self.text}


class SnapledgerError(Exception):
    """Base class of every error snapledger raises on purpose; ``suggestion``: the payload
    its message says to send next, if it names one."""

    suggestion: Suggestion | None = None

    def __init__(self, *args: object, suggestion: Suggestion | None = None) -> None:
        super().__init__(*args)
        self.suggestion = suggestion


class InvalidRequestError(SnapledgerError):
    """A request or payload is malformed; the message names the fields and what to send."""


class InvalidKeyError(InvalidRequestError):
    """An object key does not follow the storage layout (see docs/ledger.md)."""


class ManifestTooLargeError(InvalidRequestError):
    """A manifest exceeds the size or file-count limits."""


class NotFoundError(SnapledgerError):
    """The thing asked for does not exist (a lineage, a snapshot, a job, an object)."""


class ConcurrencyError(SnapledgerError):
    """A conditional write lost a race more times than the retry budget allows."""


class StaleVersionError(ConcurrencyError):
    """A change named the version it was based on, and the thing is no longer at it."""


class ObjectExistsError(SnapledgerError):
    """A conditional create found the object already there."""


class StoreUnavailableError(SnapledgerError):
    """The backing service throttled or failed after the bounded retries; try again later."""


class LostRaceError(ConcurrencyError):
    """A conditional write found the lineage changed since it was read: re-read and retry."""

    def __init__(self, message: str, *, committed_command_id: str | None = None) -> None:
        super().__init__(message)
        #: the command id of the event already at the sequence number we tried to write
        self.committed_command_id = committed_command_id


class TransientStoreError(StoreUnavailableError):
    """A throttle, transaction conflict or lost response: safe to retry as it is."""


class JobStartError(SnapledgerError):
    """The job runner refused to start the job (not a transient failure)."""


class AccessDeniedError(SnapledgerError):
    """IAM refused a call: the role lacks ``action`` on ``resource`` (a deployment problem).

    Retrying cannot help; the message names what to grant, or what to look for (an explicit
    deny, a bucket or key policy) if the role already allows it.
    """

    def __init__(self, action: str, resource: str, detail: str = "") -> None:
        self.action = action
        self.resource = resource
        super().__init__(
            f"access denied: this function's role may not call {action} on {resource}"
            + (f" ({detail})" if detail else "")
            + ". Grant it to the role (infra/constructs/function_roles.py), or remove the deny "
            "or resource policy that refuses it"
        )
