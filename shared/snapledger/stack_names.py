"""The names the client and the CDK stack share, declared once: both import them from here.

The client (and the CLI on it) finds a deployment by its stack's name and reads its
functions from the stack's outputs named ``Function{Name}``; the stack (infra/) creates
them under these names. The functions emit their metrics in ``METRICS_NAMESPACE`` with the
``service`` dimension ``SERVICE_NAME``, and the stack's alarms watch the same names. A
module of its own (standard library only) so the client, the functions and infra import it
without importing each other.
"""

from __future__ import annotations

#: The CloudFormation stack ``cdk deploy`` creates, and the one the client looks up.
STACK_NAME = "Snapledger"
#: Powertools' ``service`` (a metric dimension, a log key) and the stack's ``project`` tag.
SERVICE_NAME = "snapledger"
#: The CloudWatch namespace of every metric the functions emit (Powertools Metrics, EMF).
METRICS_NAMESPACE = "Snapledger"
#: A function's stack output is this prefix and its name in CamelCase (``FunctionGc``).
OUTPUT_FUNCTION_PREFIX = "Function"

# Metrics GC publishes on every run and the stack alarms on.
#: Stuck jobs a run found and failed.
STUCK_JOBS_METRIC = "StuckJobs"
#: Streams whose lineages failed unexpectedly (each one's failure is in the report and the
#: logs), and lineages whose lagging latest.json GC could not repair (what it names is
#: kept). Either also fails the scheduled invocation.
GC_STREAMS_FAILED_METRIC = "Gc_streams_failed"
GC_POINTERS_UNREPAIRED_METRIC = "Gc_pointers_unrepaired"
#: Restate latests found broken by a run's heal check (healed or not): alarmed at >= 1.
GC_RESTATE_LATESTS_BROKEN_METRIC = "Gc_restate_latests_broken"
