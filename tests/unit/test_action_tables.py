"""One dispatch style for console actions: the query, gc and launch functions each parse a
payload and pick its answer through an ``ActionTable`` (entrypoints/actions.py)."""

from __future__ import annotations

from enum import Enum
from typing import Literal

import pytest
from pydantic import BaseModel, ValidationError

from snapledger.entrypoints import gc, launch, query
from snapledger.entrypoints.actions import ActionTable, action_names
from snapledger.job_kinds import JobKind


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Paint(BaseModel):
    action: Colour
    coats: int = 1


class Wash(BaseModel):
    action: Literal["wash"]


def paint(request: Paint) -> str:
    return f"painted {request.action.value} x{request.coats}"


def wash(request: Wash) -> str:
    return "washed"


def table() -> ActionTable:
    return ActionTable("chore", ((Paint, paint), (Wash, wash)), otherwise=", or none to rest")


def test_a_literal_names_one_action_and_an_enum_one_per_member() -> None:
    assert action_names(Wash) == ("wash",)
    assert action_names(Paint) == ("red", "blue")
    assert table().names() == ["blue", "red", "wash"]


def test_a_payload_is_parsed_as_its_actions_model_and_answered_by_its_row() -> None:
    chores = table()
    request = chores.parse({"action": "blue", "coats": 2})
    assert isinstance(request, Paint)
    assert chores.answer_for(request)(request) == "painted blue x2"
    washing = chores.parse({"action": "wash"})
    assert chores.answer_for(washing)(washing) == "washed"


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({}, "required: one of blue, red, wash, or none to rest"),
        ({"action": "dust"}, "'dust' is not an action: use one of blue, red, wash, or none"),
        ({"action": 7}, "7 is not an action"),
    ],
)
def test_a_missing_or_unknown_action_is_refused_naming_the_field_and_the_choices(
    payload: dict, problem: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        table().parse(payload)
    (error,) = refused.value.errors()
    assert error["loc"] == ("action",)
    assert problem in error["msg"]


def test_the_models_own_field_errors_still_name_their_field() -> None:
    with pytest.raises(ValidationError) as refused:
        table().parse({"action": "red", "coats": "many"})
    assert refused.value.errors()[0]["loc"] == ("coats",)


def test_an_action_declared_twice_is_refused_when_the_table_is_built() -> None:
    with pytest.raises(ValueError, match="'wash' is declared twice"):
        ActionTable("chore", ((Wash, wash), (Wash, wash)))


def test_a_model_without_a_literal_or_enum_action_is_refused() -> None:
    class Loose(BaseModel):
        action: str

    with pytest.raises(TypeError, match="Literal or an Enum"):
        action_names(Loose)


def test_each_function_lists_its_actions_from_its_table() -> None:
    assert "latest" in query.actions() and "jobs" in query.actions()
    assert {"hold", "policy_set", "restate_restore"} <= set(gc.actions())
    registry = ["producer_offsets_delete", "producer_offsets_register"]
    assert launch._ACTIONS.names() == sorted(
        [*(k.value for k in JobKind), "snapshot_stream", *registry]
    )


def test_a_launch_payload_without_an_action_is_refused_listing_every_action() -> None:
    with pytest.raises(ValidationError) as refused:
        launch.parse_launch({"stream": "orders"}, "req-1")
    (error,) = refused.value.errors()
    assert error["loc"] == ("action",)
    assert "snapshot_stream" in error["msg"] and "restore" in error["msg"]
