"""The upper bound of every number and size that enters snapledger, in one place.

Each bound is refused at the edge that receives it (a manifest, a console payload, a CLI
option, an object's bytes) with the field named; ``docs/limits.md`` lists them with their
errors, and a test checks that table against these values. Nothing past a bound reaches
the ledger, the DynamoDB serializer (38 digits) or the jobs (int64).
"""

from __future__ import annotations

#: The largest signed 64-bit integer: the changelog's and the jobs' LSN type.
MAX_INT64 = 2**63 - 1
#: LSNs and epochs are int64 end to end (a manifest, the changelog, the jobs, requests).
MAX_LSN = MAX_INT64
MAX_EPOCH = MAX_INT64
#: A manifest's sizes and row counts (each file's and the total) are int64 too.
MAX_COUNT = MAX_INT64
MAX_PARTITION = 999_999_999
#: Restate's unsigned 64-bit numbers: a snapshot's ``cluster_fingerprint`` and its
#: ``key_range`` ends (Rust ``u64``s; a fingerprint is random, so half are above int64).
MAX_UINT64 = 2**64 - 1

#: ``_manifest.json``: its size, its files, its offsets and how deep its JSON nests
#: (a v1 manifest nests 3 levels; anything past this bound is refused before parsing).
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_MANIFEST_FILES = 10_000
MAX_OFFSETS = 2_048
#: A Kafka Streams snapshot's input topic-partitions (the position its last changelog record
#: carries): its ``offsets`` hold them and its own changelog partition's.
MAX_INPUT_PARTITIONS = MAX_OFFSETS - 1
#: The offsets' names and values together (each value counted as 20 bytes): they are
#: stored in the snapshot's ledger item and event, under DynamoDB's 400 KB an item.
MAX_OFFSETS_BYTES = 64 * 1024
#: A manifest's references to files outside its snapshot's folder (an earlier snapshot's
#: files, or the lineage's ``shared/`` folder), and the length of each path: the paths are
#: kept in the snapshot's ledger item and its ``SnapshotRegistered`` event, so together
#: (at most 160 KB) they stay under DynamoDB's 400 KB an item and EventBridge's 256 KB an
#: event with the rest of the snapshot's fields.
MAX_REFERENCES = 1_000
MAX_REFERENCE_PATH_CHARS = 160
#: How long before its registration a file of ``shared/`` that no registered snapshot
#: references yet may have been written: GC's orphan sweep deletes such a file once it is
#: older than the grace window (never under 1 h), so a reference to an older one could
#: race the sweep; registration refuses it (upload it again, under a new name).
MAX_NEW_SHARED_FILE_AGE_S = 30 * 60
#: A lineage's snapshots that reference files and are not DELETED: their sort keys are kept
#: on the lineage's HEAD item (about 52 bytes each), which GC reads before deleting.
MAX_SHARING_SNAPSHOTS = 2_000
MAX_JSON_DEPTH = 32
#: ``latest.json`` and ``generation.json``: a pointer lists its snapshot's files as the
#: manifest does (up to 10,000), so it may pass the manifest's own bound; a bigger object
#: is not one snapledger wrote: read no further, refused by readers, replaced by the registry.
MAX_POINTER_BYTES = 2 * MAX_MANIFEST_BYTES

#: A Parquet footer longer than this is refused without reading it (a key/value/lsn
#: file's footer is a few KiB; one row group per 128 MiB keeps it far below).
MAX_PARQUET_FOOTER_BYTES = 16 * 1024 * 1024

#: A final object a job publishes on S3 (a data file, a manifest): S3's limit for one
#: PutObject, the only write that creates a key only if it is absent (``If-None-Match``)
#: without a multipart upload (jobs/create_only.py).
MAX_PUBLISHED_OBJECT_BYTES = 5 * 1024**3

#: The longest key stored verbatim in a DynamoDB sort key (1,024 bytes, with the item's
#: prefix); longer ones are hashed.
MAX_SORT_KEY_BYTES = 1024
#: A query's ``cursor`` as the console sends it back: the ones snapledger gives are a few
#: hundred characters; a longer one is refused before it is decoded.
MAX_CURSOR_CHARS = 8192

#: Every duration a policy, a hold or a setting names, in hours: 100 years.
MAX_HOURS = 876_000.0
#: How far ahead a hold may expire: the same 100 years.
MAX_HOLD_HOURS = MAX_HOURS

#: How many problems a snapshot found broken keeps on its record (the first ones, the last
#: line then counting the rest: ``SnapshotFoundBroken``), and how long each may be.
MAX_RECORDED_PROBLEMS = 16
MAX_PROBLEM_CHARS = 1024

#: A changelog topic's ``delete.retention.ms`` as a manifest's ``changelog`` reports it:
#: the same 100 years, in milliseconds (Kafka allows any long; a longer one means "keep
#: tombstones for ever" to retention, and is refused here as past any real topic's).
MAX_RETENTION_MS = int(MAX_HOURS * 3_600_000)

#: The producer-offsets registry (docs/fluss.md): a producer id's length, the bucket offsets
#: one registration holds (stored in one ledger item, under DynamoDB's 400 KB: at most about
#: 90 bytes each), and how long an entry may live, in seconds (30 days; default 24 h).
MAX_PRODUCER_ID_CHARS = 128
MAX_PRODUCER_OFFSETS = 2_048
MAX_PRODUCER_OFFSETS_TTL_SECONDS = 30 * 86_400
