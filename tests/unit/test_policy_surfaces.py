"""Each retention policy field is declared once (``RetentionPolicy`` with its ``Bounds``,
models/policy.py) and every surface that sets a policy takes it from there: the console's
``policy_set`` payload, ``GcConfig``'s ``default_*`` settings, the client's ``set_policy``
keywords and the CLI's ``policy set`` options (which ask first when it lowers retention).

Each test iterates the declaration, so a field a surface does not accept fails here by name.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import pytest
from pydantic import ValidationError

from snapledger.cli import app as cli_app
from snapledger.cli import confirm
from snapledger.cli.policy_options import option_name
from snapledger.client.control import Snapledger
from snapledger.entrypoints.gc import PolicySetRequest, parse_gc
from snapledger.gc_settings import GcConfig, GcSettings
from snapledger.models.policy import (
    POLICY_FIELDS,
    Bounds,
    PolicyField,
    RetentionPolicy,
    _declared,
)
from snapledger.settings import settings_from_env
from tests.cli.support import Recording, run_cli

FIELDS = pytest.mark.parametrize("field", POLICY_FIELDS, ids=lambda f: f.name)


def sample(field: PolicyField) -> Any:
    """A value of ``field`` other than its default that is a valid policy on its own: a
    switch on, a number at its upper bound."""
    if field.kind is bool:
        return not field.default
    assert field.bounds.le is not None, f"{field.name} declares no upper bound (limits.py)"
    return field.kind(field.bounds.le)


def past_bound(field: PolicyField) -> Any:
    return None if field.bounds.le is None else field.kind(field.bounds.le) + 1


def test_the_declaration_is_the_policy_and_its_bounds() -> None:
    assert [f.name for f in POLICY_FIELDS] == list(RetentionPolicy.model_fields)
    assert {f.name for f in POLICY_FIELDS} >= {"delete_changelog_below_trim", "min_generations"}


def test_a_field_declared_without_its_bounds_is_refused_at_import() -> None:
    class Undeclared(RetentionPolicy):
        keep_tuesdays: bool = False

    with pytest.raises(TypeError, match="keep_tuesdays"):
        _declared(Undeclared)

    class Declared(RetentionPolicy):
        keep_tuesdays: Annotated[bool, Bounds("switch", "Keep Tuesday's.")] = False

    assert _declared(Declared)[-1].name == "keep_tuesdays"


@FIELDS
def test_the_console_accepts_each_field_within_its_bounds(field: PolicyField) -> None:
    payload = {"action": "policy_set", "stream": "orders", field.name: sample(field)}
    request = parse_gc(payload)
    assert isinstance(request, PolicySetRequest)
    assert request.model_dump(exclude_none=True)[field.name] == sample(field)
    if past_bound(field) is not None:
        with pytest.raises(ValidationError) as refused:
            parse_gc({**payload, field.name: past_bound(field)})
        assert [e["loc"] for e in refused.value.errors()] == [(field.name,)]


@FIELDS
def test_gc_config_has_a_default_for_each_field(field: PolicyField) -> None:
    assert GcConfig().default_policy() == RetentionPolicy()
    configured = GcConfig.model_validate({f"default_{field.name}": sample(field)})
    assert getattr(configured.default_policy(), field.name) == sample(field)
    # ... and reads it from SNAPLEDGER_DEFAULT_<FIELD>, as the CDK app and local runtime set it
    env = {
        "SNAPLEDGER_TABLE": "ledger",
        "SNAPLEDGER_ROOT": "file:///tmp/root",
        f"SNAPLEDGER_DEFAULT_{field.name.upper()}": str(sample(field)).lower(),
    }
    from_env = settings_from_env(GcSettings, env).default_policy()
    assert getattr(from_env, field.name) == sample(field)


@FIELDS
def test_the_client_sends_each_field(field: PolicyField) -> None:
    sent = Recording()
    Snapledger(sent).set_policy("orders", **{field.name: sample(field)})
    (function, payload), *_ = sent.sent
    assert function == "gc" and payload["action"] == "policy_set"
    assert payload[field.name] == sample(field)
    assert field.name in inspect.signature(Snapledger.set_policy).parameters


def test_the_client_refuses_a_keyword_that_is_no_policy_field() -> None:
    sent = Recording()
    with pytest.raises(TypeError, match="min_cuont"):
        Snapledger(sent).set_policy("orders", min_cuont=3)
    assert sent.sent == []


@FIELDS
def test_the_cli_has_an_option_for_each_field(field: PolicyField, monkeypatch) -> None:
    sent = Recording()
    monkeypatch.setattr(cli_app, "_transport", lambda options: sent)
    value = sample(field)
    argv = [option_name(field)] if field.kind is bool else [option_name(field), str(value)]
    ran = run_cli("--json", "policy", "set", "orders", *argv, "--yes")
    assert ran.status == 0, ran.err
    [payload] = [p for _, p in sent.sent if p["action"] == "policy_set"]
    assert payload[field.name] == value
    assert payload.keys() & {f.name for f in POLICY_FIELDS} == {field.name}
    if past_bound(field) is not None:
        ran = run_cli(
            "policy", "set", "orders", option_name(field), str(past_bound(field)), "--yes"
        )
        assert ran.status == 2 and option_name(field) in ran.err


def test_the_cli_turns_a_switch_off(monkeypatch) -> None:
    sent = Recording()
    monkeypatch.setattr(cli_app, "_transport", lambda options: sent)
    assert run_cli("policy", "set", "orders", "--no-delete-changelog-below-trim").status == 0
    [payload] = [p for _, p in sent.sent if p["action"] == "policy_set"]
    assert payload["delete_changelog_below_trim"] is False


@FIELDS
def test_the_cli_asks_before_each_field_lowers_retention(field: PolicyField) -> None:
    b = field.bounds
    if b.lowers == "floor":
        current, change = {field.name: field.kind(b.le)}, {field.name: field.kind(b.ge)}
    elif b.lowers == "cap":
        current, change = {field.name: None}, {field.name: sample(field)}
    else:
        current, change = {field.name: False}, {field.name: True}
    assert confirm.lowered_retention(current, change) != []
    assert confirm.lowered_retention(change, change) == []
