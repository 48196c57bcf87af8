"""The layout map (``layouts/layout_map.py``) and the registry of layouts it is checked
against (``layouts/registry.py``): parsing, each error naming the entry and the field, the
deprecated settings read into the same map, and the catalog built from it."""

from __future__ import annotations

import json
import re

import pytest

from snapledger.errors import InvalidRequestError
from snapledger.layouts import restate_keys
from snapledger.layouts.layout_map import (
    MAX_LAYOUT_ENTRIES,
    LayoutEntry,
    layout_map,
    legacy_entries,
    settings_layout_map,
)
from snapledger.layouts.registry import (
    LAYOUT_NAMES,
    MANIFEST_NAMES,
    POINTER_OWNERS,
    REGISTRY,
    ROOTED,
    SNAPSHOT_ID_PATTERN,
)
from snapledger.settings import LedgerSettings, settings_from_env
from snapledger.strategies.catalog import LayoutCatalog, strategy_class

TOPIC = "totals-app-totals-changelog"
MAP = {
    "restate/prod-1/": {"layout": "restate", "stream": "payments"},
    TOPIC: {"layout": "kafka-streams"},
    "orders": "native",
}


def test_a_map_parses_into_checked_sorted_entries_and_back():
    parsed = layout_map(json.dumps(MAP))
    assert parsed.entries == (
        LayoutEntry("orders", "native", "orders"),
        LayoutEntry("restate/prod-1", "restate", "payments"),  # normalized
        LayoutEntry(TOPIC, "kafka-streams", TOPIC),
    )
    assert layout_map(parsed.dumps()) == parsed
    assert parsed.layout_of("payments") == "restate"
    assert parsed.layout_of("anything-else") == "native"
    assert layout_map("") == layout_map(None) == layout_map({})


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{not json", "the layout map is not JSON"),
        ("[]", "must be a JSON object"),
        ({"x": {"layout": "fluss"}}, "entry 'x': field 'layout': unknown layout 'fluss'"),
        ({"x": {}}, "entry 'x': field 'layout': missing"),
        ({"x": {"layout": "native", "kind": 1}}, "entry 'x': field 'kind': unknown"),
        ({"x": 3}, "entry 'x': must be an object"),
        ({"a/b": "native"}, "entry 'a/b': field 'key' (native stream)"),
        ({"orders": "kafka-streams"}, "entry 'orders': field 'key' (kafka-streams stream)"),
        ({"orders": {"layout": "native", "stream": "x"}}, "entry 'orders': field 'stream'"),
        ({"restate/a": "restate"}, "entry 'restate/a': field 'stream': required"),
        ({"restate/a": {"layout": "restate", "stream": "a b"}}, "field 'stream': stream name"),
        ({"snapshots/x": {"layout": "restate", "stream": "s"}}, "field 'key' (restate prefix)"),
        ({"/": {"layout": "restate", "stream": "s"}}, "bucket's root"),
        (
            {"restate/a": {"layout": "restate", "stream": "s"}, "restate/a/": "native"},
            "field 'key'",
        ),
        (
            {
                "restate/a": {"layout": "restate", "stream": "s"},
                "restate/a/b": {"layout": "restate", "stream": "t"},
            },
            "entry 'restate/a/b': field 'key': prefixes 'restate/a/b' and 'restate/a' overlap",
        ),
        (
            {"restate/a": {"layout": "restate", "stream": TOPIC}, TOPIC: "kafka-streams"},
            f"entry {TOPIC!r}: field 'stream': stream {TOPIC!r} is also entry 'restate/a'",
        ),
        (
            {
                "restate/a": {"layout": "restate", "stream": "s"},
                "restate/b": {"layout": "restate", "stream": "s"},
            },
            "stream 's' is also entry 'restate/a''s (restate)",
        ),
    ],
)
def test_bad_input_is_one_error_naming_the_entry_and_the_field(raw, says):
    with pytest.raises(InvalidRequestError, match=re.escape(says)):
        layout_map(raw)


def test_the_count_of_entries_is_bounded():
    many = {f"app-s{i}-changelog": "kafka-streams" for i in range(MAX_LAYOUT_ENTRIES)}
    assert len(layout_map(many).entries) == MAX_LAYOUT_ENTRIES
    many["one-more-changelog"] = "kafka-streams"
    with pytest.raises(InvalidRequestError, match=f"over the {MAX_LAYOUT_ENTRIES}"):
        layout_map(many)


def _settings(**env: str) -> LedgerSettings:
    names = {f"SNAPLEDGER_{k.upper()}": v for k, v in env.items()}
    return settings_from_env(
        LedgerSettings, {"SNAPLEDGER_TABLE": "ledger", "SNAPLEDGER_ROOT": "s3://b", **names}
    )


def test_the_deprecated_settings_are_read_into_the_same_map():
    old = _settings(
        restate_prefixes=json.dumps({"restate/prod-1": "payments"}),
        kafka_streams_streams=json.dumps([TOPIC]),
    )
    new = _settings(layouts=json.dumps(MAP))
    assert settings_layout_map(old).entries == tuple(
        e for e in settings_layout_map(new).entries if e.layout != "native"
    )
    # both given for the same key: fine when they agree, an error naming both when not
    both = _settings(
        layouts=json.dumps(MAP), restate_prefixes=json.dumps({"restate/prod-1": "payments"})
    )
    assert settings_layout_map(both) == settings_layout_map(new)
    clash = _settings(
        layouts=json.dumps(MAP), restate_prefixes=json.dumps({"restate/prod-1": "orders"})
    )
    with pytest.raises(
        InvalidRequestError, match=r"SNAPLEDGER_RESTATE_PREFIXES.*entry 'restate/prod-1' is"
    ):
        settings_layout_map(clash)
    with pytest.raises(InvalidRequestError, match="named both a Restate prefix and a Kafka"):
        legacy_entries({TOPIC: "s"}, [TOPIC])


def test_the_catalog_built_from_the_map_answers_each_layout_for_its_streams():
    catalog = LayoutCatalog(layout_map(MAP))
    for stream, layout in (
        ("payments", "restate"),
        (TOPIC, "kafka-streams"),
        ("orders", "native"),
        ("unnamed", "native"),
    ):
        assert catalog.for_stream(stream).name == layout, stream
    assert [s.stream for s in catalog.rooted] == ["payments"]
    assert catalog.for_stream("payments").root(3) == "restate/prod-1/3/"
    placed = catalog.place("restate/prod-1/3/lsn_00000000000000000007-snap_abc/metadata.json")
    assert placed.strategy.name == "restate" and placed.location.stream == "payments"
    assert LayoutCatalog.of({"restate/prod-1": "payments"}, [TOPIC]).map == layout_map(
        {k: v for k, v in MAP.items() if k != "orders"}
    )


def test_every_per_layout_list_derives_from_the_registry():
    # (a layout added to the registry needs no line here)
    assert tuple(r.name for r in REGISTRY) == LAYOUT_NAMES
    assert {"native", "restate", "kafka-streams"} <= set(LAYOUT_NAMES)
    assert tuple(r.name for r in REGISTRY if r.rooted) == ROOTED and "restate" in ROOTED
    assert set(MANIFEST_NAMES) == {r.manifest_name for r in REGISTRY}
    assert {"_manifest.json", restate_keys.METADATA_NAME} <= set(MANIFEST_NAMES)
    for entry in REGISTRY:  # each strategy says what the registry says of it
        cls = strategy_class(entry.name)
        strategy = cls("s", "restate/x") if entry.rooted else cls("app-s-changelog")
        assert (strategy.name, strategy.owner, strategy.manifest_name) == (
            entry.name,
            POINTER_OWNERS[entry.name],
            entry.manifest_name,
        )
        assert re.fullmatch(SNAPSHOT_ID_PATTERN, "snap_1" if entry.rooted else "01JD" + "0" * 22)
