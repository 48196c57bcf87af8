"""Uniform JSON answers: success, expected refusals, and validation answers naming fields."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from snapledger.errors import (
    AccessDeniedError,
    InvalidRequestError,
    NotFoundError,
    SnapledgerError,
    StaleVersionError,
)

Answer = dict[str, Any]
# The field name a problem with the payload as a whole is reported under.
WHOLE_PAYLOAD = "(payload)"
COUNT = "Count"

_log = logging.getLogger(__name__)
# Pydantic's wording, where a console user needs a plainer one.
_PLAIN_PROBLEMS = {
    "missing": "required",
    "extra_forbidden": "not a known field: remove it",
}


class MetricSink(Protocol):
    """Where counts go: Powertools ``Metrics`` in a function, a fake in tests."""

    def add_metric(self, name: str, unit: str, value: float) -> None: ...


def count(metrics: MetricSink, name: str) -> None:
    """Add one to the counter ``name`` (EMF, flushed when the handler returns)."""
    metrics.add_metric(name=name, unit=COUNT, value=1)


def ok(**fields: Any) -> Answer:
    """A success answer: ``{"ok": true, **fields}`` (fields must be JSON-safe)."""
    return {"ok": True, **fields}


def refusal(error: str, message: str, **fields: Any) -> Answer:
    """An expected refusal: ``{"ok": false, "error": error, "message": message, ...}``."""
    return {"ok": False, "error": error, "message": message, **fields}


def answer_for_error(exc: SnapledgerError, *, console: bool = True) -> Answer | None:
    """The answer for an expected error of a request, or None if it must raise.

    ``console``: someone reads the answer (a console or CLI invocation). An access denial
    is answered there, naming the action and resource; for an event (the GC schedule, an
    EventBridge launch request) it raises instead, so the delivery fails, Lambda retries it
    and then keeps it in the function's failure queue, and the Errors alarm fires.
    """
    suggested = {"suggestion": exc.suggestion.as_data()} if exc.suggestion else {}
    if isinstance(exc, NotFoundError):
        return refusal("not_found", str(exc), **suggested)
    if isinstance(exc, InvalidRequestError):
        return refusal("invalid_request", str(exc), **suggested)
    if isinstance(exc, StaleVersionError):
        return refusal("conflict", str(exc))
    if isinstance(exc, AccessDeniedError):
        if not console:
            return None
        _log.error("%s", exc, extra={"action": exc.action, "resource": exc.resource})
        return refusal("access_denied", str(exc), action=exc.action, resource=exc.resource)
    return None


def field_problems(exc: ValidationError) -> list[dict[str, str]]:
    """``[{"field": "partition", "problem": "..."}]``, one per problem pydantic found."""
    problems: list[dict[str, str]] = []
    for error in exc.errors(include_url=False):
        problem = _PLAIN_PROBLEMS.get(error["type"], error["msg"])
        context = error.get("ctx") or {}
        fields = context.get("fields") if not error["loc"] else None
        names = list(fields) if fields else [field_path(error["loc"])]
        problems += [{"field": name, "problem": problem} for name in names]
    return problems


def validation_answer(exc: ValidationError, *, subject: str, expected: str = "") -> Answer:
    """The answer to a malformed payload: what is wrong with which field, never a trace."""
    fields = field_problems(exc)
    by_problem: dict[str, list[str]] = {}
    for p in fields:  # one problem naming several fields is said once
        by_problem.setdefault(p["problem"], []).append(p["field"])
    listed = "; ".join(f"{', '.join(names)}: {problem}" for problem, names in by_problem.items())
    message = f"the {subject} is not valid: {listed}"
    if expected:
        message += f". Expected {expected}"
    return refusal("validation", message, fields=fields)


def invalid_payload(
    exc: ValidationError, metrics: MetricSink, *, metric: str, subject: str, expected: str = ""
) -> Answer:
    """``validation_answer``, logged and counted: it is answered, not retried."""
    answer = validation_answer(exc, subject=subject, expected=expected)
    _log.warning("refused a malformed %s", subject, extra={"fields": answer["fields"]})
    count(metrics, metric)
    return answer


Parsed = TypeVar("Parsed")


@dataclass(frozen=True)
class Intake(Generic[Parsed]):
    """How a handler takes its event in: ``parse`` it, or refuse it as malformed.

    A malformed event (``parse`` raised a ValidationError) is answered with
    ``invalid_payload`` (named ``subject``, counted under ``metric``), never raised: sending
    it again cannot help. Only ``parse`` is guarded; what answers the parsed request raises
    as it would."""

    parse: Callable[[object], Parsed]
    subject: str
    metric: str
    #: The accepted shapes, said after the problems ("Expected ..."), when there are several.
    expected: str = ""

    def answer(
        self, event: object, metrics: MetricSink, answer: Callable[[Parsed], Answer]
    ) -> Answer:
        """``answer`` of the parsed event, or the validation answer naming its fields."""
        try:
            parsed = self.parse(event)
        except ValidationError as exc:
            return invalid_payload(
                exc, metrics, metric=self.metric, subject=self.subject, expected=self.expected
            )
        return answer(parsed)


def field_path(loc: Iterable[int | str]) -> str:
    """``("Records", 0, "s3", "object", "key")`` → ``Records[0].s3.object.key``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or WHOLE_PAYLOAD


def payload_error(
    title: str, problems: Sequence[tuple[str, str]], payload: object
) -> ValidationError:
    """A ValidationError naming ``(field, problem)`` pairs, for checks pydantic cannot state
    by itself (an unknown action, a payload that is not an object)."""
    details = [
        InitErrorDetails(
            type=PydanticCustomError("payload", "{problem}", {"problem": problem}),
            loc=(field,) if field != WHOLE_PAYLOAD else (),
            input=payload,
        )
        for field, problem in problems
    ]
    return ValidationError.from_exception_data(title, details)


def as_object(payload: object, title: str) -> Mapping[str, Any]:
    """``payload`` if it is a JSON object, else a ValidationError saying so."""
    if not isinstance(payload, Mapping):
        raise payload_error(
            title, [(WHOLE_PAYLOAD, f"must be a JSON object, got {_json_type(payload)}")], payload
        )
    return payload


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


class RecordsFailedError(SnapledgerError):
    """Some records failed unexpectedly (the rest were processed); raised to be retried."""

    def __init__(self, failures: Sequence[tuple[str, Exception]]) -> None:
        listed = "; ".join(f"{key}: {type(exc).__name__}: {exc}" for key, exc in failures)
        super().__init__(
            f"{len(failures)} record(s) failed and will be retried with the delivery (the "
            f"others are recorded, and are duplicates on retry): {listed}"
        )
        self.keys = [key for key, _ in failures]
