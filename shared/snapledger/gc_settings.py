"""GC's configuration: the default retention policy and the windows, from ``SNAPLEDGER_*``.

``GcConfig`` is what the services take (tests build it directly); ``GcSettings`` adds it
to the table and root every function needs, for ``settings_from_env(GcSettings)``:

    SNAPLEDGER_DEFAULT_MIN_COUNT=3        SNAPLEDGER_DEFAULT_MIN_AGE_HOURS=24
    SNAPLEDGER_DEFAULT_MAX_COUNT=         SNAPLEDGER_DEFAULT_MAX_AGE_HOURS=
    SNAPLEDGER_DEFAULT_MIN_GENERATIONS=1  SNAPLEDGER_DEFAULT_DELETE_CHANGELOG_BELOW_TRIM=false
    SNAPLEDGER_ORPHAN_GRACE_HOURS=24      SNAPLEDGER_STUCK_JOB_HOURS=1
    SNAPLEDGER_STOP_WITH_SECONDS_LEFT=30
    SNAPLEDGER_GC_WORKERS=4               SNAPLEDGER_GC_SHARD_SIZE=50
    SNAPLEDGER_GC_QUEUE_URL=              SNAPLEDGER_GC_FAN_OUT_ABOVE_LINEAGES=200

The ``default_*`` settings are the retention policy's fields (``models/policy.py``), each
with the policy's own default: ``SNAPLEDGER_DEFAULT_`` and the field's name.

Fan-out (docs/retention.md, *Scaling out*): with ``GC_QUEUE_URL`` set, a full run over
more than ``GC_FAN_OUT_ABOVE_LINEAGES`` lineages sends them, ``GC_SHARD_SIZE`` to a
message, to that queue, and the gc function's SQS trigger runs each shard; otherwise
(unset, or a small deployment) one invocation does every lineage itself. Either way an
invocation works on up to ``GC_WORKERS`` lineages at once.
"""

from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from snapledger.errors import InvalidRequestError
from snapledger.limits import MAX_COUNT, MAX_HOURS
from snapledger.models.policy import POLICY_FIELDS, RetentionPolicy, default_fields, parse_policy
from snapledger.settings import LedgerSettings

#: Where the CDK app tells the gc function its shard queue.
ENV_GC_QUEUE_URL = "SNAPLEDGER_GC_QUEUE_URL"
#: Under this, an upload in progress (files written, manifest not yet) could be swept.
MIN_ORPHAN_GRACE_HOURS = 1.0
#: Under this, a launch still talking to the runner could be failed as "never started".
MIN_STUCK_JOB_HOURS = 0.25
#: Lambda's longest invocation: a reserve at least this long would never start any work.
MAX_STOP_WITH_SECONDS_LEFT = 900.0


#: The prefix of the default policy's fields among GC's settings.
DEFAULT_PREFIX = "default_"

if TYPE_CHECKING:
    _DefaultPolicy = BaseModel
else:  # default_<field> for each policy field, as models/policy.py declares it
    _DefaultPolicy = create_model(
        "_DefaultPolicy",
        __module__=__name__,
        # Built on first use, as GcConfig and GcSettings (which inherit it): a function
        # validates GcConfig at its first ``runtime()``, GcSettings only in tests.
        __config__=ConfigDict(defer_build=True),
        **default_fields(DEFAULT_PREFIX),
    )


class GcConfig(_DefaultPolicy):
    """How GC runs: the policy streams without their own get (``default_*``), and its time
    windows."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    orphan_grace_hours: float = Field(
        default=24.0,
        ge=MIN_ORPHAN_GRACE_HOURS,
        le=MAX_HOURS,
        allow_inf_nan=False,
        description="Unregistered prefixes and REJECTED snapshots' files wait this long",
    )
    stuck_job_hours: float = Field(
        default=1.0,
        ge=MIN_STUCK_JOB_HOURS,
        le=MAX_HOURS,
        allow_inf_nan=False,
        description="A job not terminal for longer is reconciled with its runner",
    )
    stop_with_seconds_left: float = Field(
        default=30.0,
        ge=0,
        le=MAX_STOP_WITH_SECONDS_LEFT,
        allow_inf_nan=False,
        description="Stop taking new work when the budget is below this",
    )
    page_size: int = Field(default=100, ge=1, le=1000)
    gc_workers: int = Field(
        default=4, ge=1, le=16, description="Lineages one invocation works on at once"
    )
    gc_queue_url: str | None = Field(
        default=None,
        min_length=1,
        description="The SQS queue of GC shards; unset: every run is a single invocation",
    )
    gc_shard_size: int = Field(
        default=50, ge=1, le=500, description="Lineages per shard message (fan-out)"
    )
    gc_fan_out_above_lineages: int = Field(
        default=200,
        ge=0,
        le=MAX_COUNT,
        description="A run over this many lineages or fewer stays in one invocation",
    )

    @model_validator(mode="after")
    def _default_policy_valid(self) -> "GcConfig":
        """The default policy is checked with the settings (bounds included), so a bad
        ``SNAPLEDGER_DEFAULT_*`` fails the cold start, naming it, not each run."""
        try:
            self.default_policy()
        except InvalidRequestError as exc:
            raise ValueError(f"SNAPLEDGER_DEFAULT_* (the default policy): {exc}") from exc
        return self

    def default_policy(self) -> RetentionPolicy:
        return parse_policy({f.name: getattr(self, DEFAULT_PREFIX + f.name) for f in POLICY_FIELDS})

    @property
    def orphan_grace(self) -> timedelta:
        return timedelta(hours=self.orphan_grace_hours)

    @property
    def stuck_job_after(self) -> timedelta:
        return timedelta(hours=self.stuck_job_hours)


class GcSettings(LedgerSettings, GcConfig):
    """The gc function's settings: the ledger's, plus GC's."""

    model_config = ConfigDict(frozen=True, extra="ignore")
