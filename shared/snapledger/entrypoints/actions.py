"""A function's console actions, dispatched one way: a table of payload models, each named
by its ``action`` field, and the function answering it.

The query, gc and launch functions each hold one ``ActionTable``. A model's ``action`` is a
one-value ``Literal`` (one action) or an enum (one action per member, e.g. a launch
request's job kinds). Adding an action is adding a row: parsing, the list of actions in a
validation answer and the dispatch follow from it. Pydantic models only: no adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any, Generic, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel

from snapledger.entrypoints.answers import payload_error

AnswerT = TypeVar("AnswerT", bound=Callable[..., Any])


def action_names(model: type[BaseModel]) -> tuple[str, ...]:
    """The action names ``model`` accepts: its ``action`` Literal's values, or its enum's."""
    annotation = model.model_fields["action"].annotation
    if get_origin(annotation) is Literal:
        return tuple(str(name) for name in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return tuple(str(member.value) for member in annotation)
    raise TypeError(f"{model.__name__}.action must be a Literal or an Enum, not {annotation!r}")


class ActionTable(Generic[AnswerT]):
    """Each action's payload model and answer; ``parse`` a payload, ``answer_for`` a request."""

    def __init__(
        self,
        subject: str,
        rows: Iterable[tuple[type[BaseModel], AnswerT]] = (),
        *,
        otherwise: str = "",
    ) -> None:
        """``subject`` names the payload in validation answers; ``otherwise`` ends the
        list of actions in an unknown-action answer (e.g. ", or none for a GC run")."""
        self._subject = subject
        self._otherwise = otherwise
        self._rows: dict[str, tuple[type[BaseModel], AnswerT]] = {}
        for model, answer in rows:
            self.add(model, answer)

    def add(self, model: type[BaseModel], answer: AnswerT) -> None:
        for name in action_names(model):
            if name in self._rows:
                raise ValueError(f"action {name!r} is declared twice")
            self._rows[name] = (model, answer)

    def action(self, model: type[BaseModel]) -> Callable[[AnswerT], AnswerT]:
        """A decorator: the decorated function answers ``model``'s action(s)."""

        def register(answer: AnswerT) -> AnswerT:
            self.add(model, answer)
            return answer

        return register

    def names(self) -> list[str]:
        """The action names, sorted."""
        return sorted(self._rows)

    def parse(self, payload: Mapping[str, Any]) -> Any:
        """The payload as its action's model; a ValidationError naming ``action`` when it
        is missing or unknown, or the model's own field errors."""
        action = payload.get("action")
        known = ", ".join(self.names())
        if action is None:
            problem = f"required: one of {known}{self._otherwise}"
            raise payload_error(self._subject, [("action", problem)], payload)
        if not isinstance(action, str) or action not in self._rows:
            problem = f"{action!r} is not an action: use one of {known}{self._otherwise}"
            raise payload_error(self._subject, [("action", problem)], payload)
        model, _ = self._rows[action]
        return model.model_validate(payload)

    def answer_for(self, request: BaseModel) -> AnswerT:
        """The function answering ``request`` (a model this table parsed)."""
        # Every row's model has an ``action`` (``action_names`` checked it when added).
        action = getattr(request, "action")  # noqa: B009
        name = action.value if isinstance(action, Enum) else action
        return self._rows[name][1]
