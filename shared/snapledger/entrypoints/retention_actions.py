"""The gc function's retention actions: holds placed and released, a stream's retention
policy read, set (each field as ``models/policy.py`` declares it, within its bounds) and
reset. Each is a payload model and the function answering it; ``entrypoints/gc.py``
dispatches them (its ``_ACTIONS``)."""

from typing import TYPE_CHECKING, Any, Literal

from pydantic import AwareDatetime, Field, create_model

from snapledger.entrypoints.answers import MetricSink
from snapledger.entrypoints.payloads import ConsolePayload, LineagePayload, SnapshotId
from snapledger.layout import STREAM_PATTERN
from snapledger.models.policy import request_fields
from snapledger.services.holds import hold_snapshot, release_hold
from snapledger.services.policies import get_policy, reset_policy, set_policy


class HoldRequest(LineagePayload):
    action: Literal["hold"]
    snapshot_id: SnapshotId
    expires_at: AwareDatetime | None = Field(default=None, strict=False)
    reason: str = Field(default="", max_length=512)
    by: str = Field(default="", max_length=128)
    hold_id: str | None = Field(default=None, min_length=1, max_length=64)


class ReleaseRequest(LineagePayload):
    action: Literal["release"]
    snapshot_id: SnapshotId
    hold_id: str | None = Field(default=None, min_length=1, max_length=64)
    by: str = Field(default="", max_length=128)


class PolicyGetRequest(ConsolePayload):
    action: Literal["policy_get"]
    stream: str = Field(pattern=f"^{STREAM_PATTERN}$")


class PolicyChangeRequest(ConsolePayload):
    """What a set and a reset share: who, on which version, and the request's identity."""

    stream: str = Field(pattern=f"^{STREAM_PATTERN}$")
    by: str = Field(default="", max_length=128)
    expected_version: int | None = Field(
        default=None, ge=0, description="Refuse unless the policy is at this version (0: default)"
    )
    request_id: str | None = Field(
        default=None, min_length=1, max_length=128, description="The same request applies once"
    )


if TYPE_CHECKING:
    from snapledger.runtime import Runtime

    _PolicyFields = ConsolePayload
else:  # one optional field per policy field, as models/policy.py declares it
    _PolicyFields = create_model(
        "_PolicyFields", __base__=ConsolePayload, __module__=__name__, **request_fields()
    )


class PolicySetRequest(PolicyChangeRequest, _PolicyFields):
    """Each policy field (``models/policy.py``'s declaration) within its own bounds
    (``limits.py``), so a value past one is answered naming that field before anything is read."""

    action: Literal["policy_set"]


class PolicyResetRequest(PolicyChangeRequest):
    action: Literal["policy_reset"]


def answer_hold(
    request: HoldRequest, rt: "Runtime", metrics: MetricSink, request_id: str | None
) -> dict[str, Any]:
    held = hold_snapshot(
        rt.ledger,
        request.lineage,
        request.snapshot_id,
        clock=rt.clock,
        expires_at=request.expires_at,
        reason=request.reason,
        by=request.by,
        hold_id=request.hold_id,
    )
    return held.to_dict()


def answer_release(
    request: ReleaseRequest, rt: "Runtime", metrics: MetricSink, request_id: str | None
) -> dict[str, Any]:
    released = release_hold(
        rt.ledger,
        request.lineage,
        request.snapshot_id,
        clock=rt.clock,
        hold_id=request.hold_id,
        by=request.by,
    )
    return released.to_dict()


def answer_policy_get(
    request: PolicyGetRequest, rt: "Runtime", metrics: MetricSink, request_id: str | None
) -> dict[str, Any]:
    return get_policy(rt.policies, request.stream, rt.gc.default_policy()).to_dict()


def _change(request: PolicyChangeRequest, rt: "Runtime", request_id: str | None) -> dict[str, Any]:
    """What a policy set and a reset pass on: who, on which version, and the identity."""
    return {
        "default": rt.gc.default_policy(),
        "clock": rt.clock,
        "by": request.by,
        "expected_version": request.expected_version,
        "request_id": request.request_id or request_id,
    }


def answer_policy_set(
    request: PolicySetRequest, rt: "Runtime", metrics: MetricSink, request_id: str | None
) -> dict[str, Any]:
    fields = request.model_dump(
        exclude={"action", "stream", "by", "expected_version", "request_id"}, exclude_none=True
    )
    return set_policy(
        rt.streams, request.stream, fields, **_change(request, rt, request_id)
    ).to_dict()


def answer_policy_reset(
    request: PolicyResetRequest, rt: "Runtime", metrics: MetricSink, request_id: str | None
) -> dict[str, Any]:
    return reset_policy(rt.streams, request.stream, **_change(request, rt, request_id)).to_dict()
