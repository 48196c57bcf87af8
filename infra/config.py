"""Deployment parameters: read once from CDK context, with defaults fit for production."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace

from constructs import Node

from infra import names
from infra.fluss_network import FlussNetwork, fluss_network
from snapledger.errors import InvalidRequestError
from snapledger.layout import STREAM_PATTERN
from snapledger.layouts.layout_map import LayoutMap, combined, legacy_entries
from snapledger.layouts.registry import LAYOUTS, PrefixGrants
from snapledger.settings import DEFAULT_LEDGER_TTL_DAYS


@dataclass(frozen=True, slots=True)
class StackConfig:
    """What a deployment may change with ``-c key=value``; everything else is fixed."""

    # Table deletion protection, and RETAIN for the table and buckets. Off only for
    # short-lived test stacks that must tear down cleanly.
    deletion_protection: bool = True
    # Reserved concurrency caps the functions that write the ledger, so an S3 burst queues
    # up in Lambda's async queue instead of throttling the table. Off by default: Lambda
    # keeps 100 executions unreserved, so reserving needs an account concurrency quota of
    # at least functions.REQUIRED_ACCOUNT_CONCURRENCY (new accounts start at 10 or 50, and
    # the deploy would fail).
    reserved_concurrency: bool = False
    # SNS topic every alarm notifies; none by default (alarms still show on the dashboard).
    alarm_topic_arn: str | None = None
    # Explicit Powertools layer ARN, overriding the public SSM parameter.
    powertools_layer_arn: str | None = None
    emr_max_vcpu: int = 16
    emr_max_memory_gb: int = 64
    log_retention_days: int = 30
    # Days terminal ledger items (events, DELETED/REJECTED records, finished jobs) stay
    # before DynamoDB's TTL removes them; 0 keeps them for ever (docs/ledger.md).
    ledger_ttl_days: int = DEFAULT_LEDGER_TTL_DAYS
    # Days the bus's archive keeps ledger events (replayable past the TTL); 0: for ever.
    event_archive_retention_days: int = 365
    # The latest protected in the bucket (docs/deploy.md): the data bucket is created with
    # S3 Object Lock (no default retention); register holds each snapshot's objects before
    # it commits, gc releases them once it deleted them. Object Lock is chosen when the
    # bucket is created: turning this on (or off) for a deployed stack replaces the bucket.
    protect_latest: bool = False
    # Staleness alarms (docs/deploy.md, "Per-stream metrics and alarms"): one on every
    # stream's lineages, whose latest snapshot is older than the default (0: no such alarm),
    # and one per stream listed, with its own threshold (no looser than the default, which
    # watches every stream too).
    stale_after_hours_default: float = 48
    stale_after_hours: dict[str, float] = field(default_factory=dict)
    # The layout map (docs/deploy.md, "Layouts"; ``-c layouts`` joined with the deprecated
    # ``-c restatePrefixes`` and ``-c kafkaStreamsStreams``), checked at synth by
    # snapledger's own ``layout_map`` exactly as the functions read SNAPLEDGER_LAYOUTS.
    layouts: LayoutMap = field(default_factory=LayoutMap)
    # Where the gc function runs to reach Fluss's ZooKeeper (-c fluss, docs/fluss.md "On
    # AWS"); None: fluss-kv tables are registered, not collected.
    fluss: FlussNetwork | None = None

    @property
    def restate_prefixes(self) -> dict[str, str]:
        """Restate clusters writing into the bucket (docs/deploy.md, "Restate"): each prefix
        (normalized: no '/' at either end) with its stream name, by stream."""
        entries = sorted(self.layouts.of("restate"), key=lambda e: e.stream)
        return {e.key: e.stream for e in entries}

    @property
    def kafka_streams_streams(self) -> tuple[str, ...]:
        """Kafka Streams changelog topics (docs/deploy.md, "Kafka Streams"): the managed
        policies of the seeding and snapshotting steps are scoped to their prefixes."""
        return tuple(e.key for e in self.layouts.of("kafka-streams"))

    @property
    def rooted_manifests(self) -> tuple[tuple[str, str], ...]:
        """Each prefix of a layout with one of its own (the registry's ``rooted``), by
        stream, with the name its producer writes last there (the registry's
        ``manifest_name``): what registration listens on."""
        entries = sorted(
            (e for e in self.layouts.entries if LAYOUTS[e.layout].rooted), key=lambda e: e.stream
        )
        return tuple((e.key, LAYOUTS[e.layout].manifest_name) for e in entries)

    @property
    def rooted_grants(self) -> tuple[tuple[str, str, PrefixGrants], ...]:
        """Each prefix of a layout with one of its own, by stream: (layout, prefix, what the
        functions do there, as the registry declares it: ``Registered.grants``)."""
        entries = sorted(
            (e for e in self.layouts.entries if LAYOUTS[e.layout].rooted), key=lambda e: e.stream
        )
        return tuple(
            (e.layout, e.key, grants)
            for e in entries
            if (grants := LAYOUTS[e.layout].grants) is not None
        )

    @classmethod
    def from_context(cls, node: Node) -> StackConfig:
        """Build from CDK context (strings from ``-c``, or typed values from cdk.json)."""
        defaults = cls()
        stale_default, stale_per_stream = _staleness(node, defaults.stale_after_hours_default)
        config = cls(
            deletion_protection=_as_bool(
                node.try_get_context(names.CTX_DELETION_PROTECTION), defaults.deletion_protection
            ),
            reserved_concurrency=_as_bool(
                node.try_get_context(names.CTX_RESERVED_CONCURRENCY),
                defaults.reserved_concurrency,
            ),
            alarm_topic_arn=node.try_get_context(names.CTX_ALARM_TOPIC_ARN) or None,
            powertools_layer_arn=node.try_get_context(names.CTX_POWERTOOLS_LAYER_ARN) or None,
            emr_max_vcpu=_as_int(
                node.try_get_context(names.CTX_EMR_MAX_VCPU), defaults.emr_max_vcpu
            ),
            emr_max_memory_gb=_as_int(
                node.try_get_context(names.CTX_EMR_MAX_MEMORY_GB), defaults.emr_max_memory_gb
            ),
            log_retention_days=_as_int(
                node.try_get_context(names.CTX_LOG_RETENTION_DAYS), defaults.log_retention_days
            ),
            ledger_ttl_days=_as_days(
                node.try_get_context(names.CTX_LEDGER_TTL_DAYS), defaults.ledger_ttl_days
            ),
            event_archive_retention_days=_as_days(
                node.try_get_context(names.CTX_EVENT_ARCHIVE_RETENTION_DAYS),
                defaults.event_archive_retention_days,
            ),
            protect_latest=_as_bool(
                node.try_get_context(names.CTX_PROTECT_LATEST), defaults.protect_latest
            ),
            stale_after_hours_default=stale_default,
            stale_after_hours=stale_per_stream,
            layouts=stack_layouts(
                node.try_get_context(names.CTX_LAYOUTS),
                node.try_get_context(names.CTX_RESTATE_PREFIXES),
                node.try_get_context(names.CTX_KAFKA_STREAMS_STREAMS),
            ),
        )
        config = replace(
            config, fluss=fluss_network(node.try_get_context(names.CTX_FLUSS), config.layouts)
        )
        if config.protect_latest and config.restate_prefixes:
            # gc releases the legal holds of what it deletes: under a Restate prefix that
            # needs grants no test runs yet (docs/deploy.md, "Restate clusters").
            raise ValueError(
                f"{names.CTX_PROTECT_LATEST} and {names.CTX_RESTATE_PREFIXES} cannot be "
                "combined yet: gc would release legal holds under the Restate prefixes, "
                "which its role is not granted; deploy one or the other"
            )
        return config


def _as_bool(value: object, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise ValueError(f"expected true or false in CDK context, got {value!r}")


def _as_days(value: object, default: int) -> int:
    days = _as_int(value, default)
    if days < 0:
        raise ValueError(f"expected a number of days >= 0 (0: for ever) in CDK context, got {days}")
    return days


def _as_int(value: object, default: int) -> int:
    if value is None:
        return default
    try:
        return int(str(value))
    except ValueError as exc:
        raise ValueError(f"expected an integer in CDK context, got {value!r}") from exc


def _from_json(raw: object, expected: str) -> object:
    """A ``-c`` value given as JSON text, parsed (a typed value from cdk.json is kept);
    ``expected`` says what it must be, and the error adds what was given."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{expected}, got {raw!r}") from exc


def _staleness(node: Node, default_hours: float) -> tuple[float, dict[str, float]]:
    """``stale_after_hours_default`` and ``stale_after_hours`` from the context, checked."""
    key = names.CTX_STALE_AFTER_HOURS_DEFAULT
    default = _as_hours(node.try_get_context(key), default_hours, key, allow_zero=True)
    raw = _from_json(
        node.try_get_context(names.CTX_STALE_AFTER_HOURS),
        f"{names.CTX_STALE_AFTER_HOURS} must be a JSON object of stream to hours, "
        "e.g. '{\"orders\": 6}'",
    )
    if raw is not None and not isinstance(raw, dict):
        raise ValueError(
            f"{names.CTX_STALE_AFTER_HOURS} must be an object of stream to hours, got {raw!r}"
        )
    per_stream: dict[str, float] = {}
    for stream, value in (raw or {}).items():
        where = f"{names.CTX_STALE_AFTER_HOURS}.{stream}"
        if not re.fullmatch(STREAM_PATTERN, str(stream)):
            raise ValueError(f"{where}: not a stream name (letters, digits, '.', '_', '-')")
        hours = _as_hours(value, 0, where, allow_zero=False)
        if default and hours > default:
            raise ValueError(
                f"{where} is {hours:g} hours, looser than {key} ({default:g}), whose alarm "
                f"watches every stream: raise {key} to at least {hours:g}, or set it to 0"
            )
        per_stream[str(stream)] = hours
    return default, per_stream


def _as_hours(value: object, default: float, key: str, *, allow_zero: bool) -> float:
    if value is None:
        return default
    try:
        hours = float(str(value))
    except ValueError as exc:
        raise ValueError(f"{key}: expected a number of hours, got {value!r}") from exc
    if not math.isfinite(hours) or hours < 0 or (hours == 0 and not allow_zero):
        least = "0 or more (0: no alarm)" if allow_zero else "more than 0"
        raise ValueError(f"{key}: expected a number of hours {least}, got {value!r}")
    return hours


# Characters IAM reads in a resource ARN or a condition value: a wildcard or a variable.
_IAM_SPECIAL = re.compile(r"[*?$]")


def stack_layouts(raw: object, restate: object = None, kafka_streams: object = None) -> LayoutMap:
    """``-c layouts`` (a JSON object, or from cdk.json an object) joined with the deprecated
    ``-c restatePrefixes`` and ``-c kafkaStreamsStreams`` (a key both give must agree),
    checked by snapledger's own ``layout_map`` (its message names the entry and the field),
    then against what the stack can deploy: prefixes free of what IAM reads as a wildcard,
    Restate streams apart in their stack outputs, at most ``MAX_KAFKA_STREAMS_STREAMS``
    Kafka Streams changelogs."""
    legacy_key = f"-c {names.CTX_RESTATE_PREFIXES}/{names.CTX_KAFKA_STREAMS_STREAMS} (deprecated)"
    new = _from_json(
        raw or {},
        f"{names.CTX_LAYOUTS} must be a JSON object of stream or prefix to its entry, e.g. "
        '\'{"restate/prod-1": {"layout": "restate", "stream": "payments"}}\'',
    )
    try:
        legacy = legacy_entries(restate_prefixes(restate), kafka_streams_streams(kafka_streams))
        layouts = combined(
            new, legacy, new_source=f"-c {names.CTX_LAYOUTS}", legacy_source=legacy_key
        )
    except InvalidRequestError as exc:
        raise ValueError(str(exc)) from exc

    def source(key: str) -> str:
        return legacy_key if key in legacy else f"-c {names.CTX_LAYOUTS}"

    for entry in layouts.entries:
        if LAYOUTS[entry.layout].rooted and _IAM_SPECIAL.search(entry.key):
            raise ValueError(
                f"{source(entry.key)}: entry {entry.key!r}: field 'key': holds '*', '?' or "
                "'$', which IAM reads as a wildcard or a variable in the policies scoped to "
                "it: choose a plain path"
            )
    outputs: dict[str, str] = {}
    for entry in layouts.of("restate"):
        output = names.restate_output_key(entry.stream)
        if output in outputs:
            raise ValueError(
                f"{source(entry.key)}: entry {entry.key!r}: field 'stream': streams "
                f"{outputs[output]!r} and {entry.stream!r} would share the stack output "
                f"{output}: name them apart by more than punctuation or case"
            )
        outputs[output] = entry.stream
    topics = layouts.of("kafka-streams")
    if len(topics) > names.MAX_KAFKA_STREAMS_STREAMS:
        raise ValueError(
            f"{source(topics[0].key)} names {len(topics)} kafka-streams topics, over the "
            f"{names.MAX_KAFKA_STREAMS_STREAMS} the managed policies scoped to them can hold: "
            "deploy a stack per group of applications"
        )
    return layouts


def restate_prefixes(raw: object) -> dict[str, str]:
    """Deprecated ``-c restatePrefixes``: a JSON object (or, from cdk.json, an object) of
    prefix to stream name, read into the layout map (``stack_layouts`` checks it)."""
    key = names.CTX_RESTATE_PREFIXES
    if raw is None or raw == "":
        return {}
    raw = _from_json(
        raw,
        f"{key} must be a JSON object of Restate prefix to stream name, e.g. "
        '\'{"restate/prod-1": "payments"}\'',
    )
    if not isinstance(raw, dict) or not all(
        isinstance(p, str) and isinstance(s, str) for p, s in raw.items()
    ):
        raise ValueError(
            f"{key} must be an object of Restate prefix to stream name (both strings), got {raw!r}"
        )
    return raw


def kafka_streams_streams(raw: object) -> tuple[str, ...]:
    """Deprecated ``-c kafkaStreamsStreams``: a JSON list (or, from cdk.json, a list) of
    changelog topics, read into the layout map (``stack_layouts`` checks them); without
    repeats."""
    key = names.CTX_KAFKA_STREAMS_STREAMS
    if raw is None or raw == "":
        return ()
    raw = _from_json(
        raw,
        f"{key} must be a JSON list of changelog topics, e.g. '[\"totals-app-totals-changelog\"]'",
    )
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise ValueError(f"{key} must be a list of changelog topic names (strings), got {raw!r}")
    return tuple(sorted(set(raw)))
