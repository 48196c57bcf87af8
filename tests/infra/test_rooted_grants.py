"""A rooted layout's grants come from its registry line: a layout with a bucket prefix of its
own (as Restate's, as Fluss's will be) declares what the functions do there
(``PrefixGrants``), and the stack grants exactly that on each of its prefixes in the layout
map, with no line of infra naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from infra import names
from infra.constructs.function_roles import IF_MATCH_ONLY, pointer_write_sid
from snapledger.layouts.registry import LAYOUTS, REGISTRY, PrefixGrants, Registered, own_prefix
from tests.infra.conftest import Synthesized, synthesize_app
from tests.infra.test_iam import _statements_of_role

#: A Fluss-shaped layout: its own prefix, ``_METADATA`` last in ``snap-{n}/`` folders.
KV = Registered(
    "kv-test",
    "tests.nowhere:KvLayout",  # never imported: the stack reads only the registry's facts
    "producer",
    "_METADATA",
    r"snap-[0-9]{1,19}",
    keyed="prefix",
    check_key=own_prefix,
    grants=PrefixGrants(readers=("register", "gc"), deleted="*/snap-*", pointers=None),
)
PREFIX = "fluss/prod-1"


@pytest.fixture(scope="module")
def kv_synth() -> Iterator[Synthesized]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(LAYOUTS, KV.name, KV)
        layouts = {PREFIX: {"layout": KV.name, "stream": "kv"}}
        yield synthesize_app(((names.CTX_LAYOUTS, json.dumps(layouts)),))


def _role_statements(synth: Synthesized, function: str) -> list[dict[str, Any]]:
    role = synth.stack.functions.functions[function].role
    assert role is not None
    return _statements_of_role(synth, role)


def _resources(statement: dict[str, Any]) -> list[str]:
    found = statement["Resource"]
    return [json.dumps(r) for r in (found if isinstance(found, list) else [found])]


def test_every_rooted_layout_declares_its_grants_and_no_other_does() -> None:
    for entry in REGISTRY:
        assert entry.rooted == (entry.grants is not None), entry.name


def test_a_new_rooted_layout_is_granted_what_its_registry_line_declares(kv_synth: Synthesized):
    for function in ("register", "gc"):
        statements = _role_statements(kv_synth, function)
        reads = [s for s in statements if s["Action"] == "s3:GetObject"]
        assert any(f"{PREFIX}/*" in r for s in reads for r in _resources(s)), function
        (listing,) = [s for s in statements if s["Action"] == "s3:ListBucket"]
        assert f"{PREFIX}/" in json.dumps(listing["Condition"]), function
    gc = _role_statements(kv_synth, "gc")
    deletes = [r for s in gc if s["Action"] == "s3:DeleteObject" for r in _resources(s)]
    assert [r for r in deletes if PREFIX in r] and all(
        f"{PREFIX}/*/snap-*" in r for r in deletes if PREFIX in r
    )
    # it declared no pointer: gc writes nothing under its prefix, register never deletes
    assert not [s for s in gc if s.get("Sid") == pointer_write_sid(KV.name)]
    puts = [r for s in gc if s["Action"] == "s3:PutObject" for r in _resources(s)]
    assert not [r for r in puts if PREFIX in r]
    register = _role_statements(kv_synth, "register")
    assert not [s for s in register if s["Action"] == "s3:DeleteObject"]
    # the other functions never touch the prefix
    for function in ("launch", "query", "job_state", "track_changelog"):
        assert PREFIX not in json.dumps(_role_statements(kv_synth, function)), function


def test_restate_keeps_its_compare_and_swap_sid_and_condition() -> None:
    assert pointer_write_sid("restate") == "RewriteRestateLatestOnlyByCompareAndSwap"
    assert pointer_write_sid("kafka-streams") == "RewriteKafkaStreamsLatestOnlyByCompareAndSwap"
    assert IF_MATCH_ONLY == {"Null": {"s3:if-match": "false"}}
