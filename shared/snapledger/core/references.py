"""Snapshots that share files: the rules of a file reference, pure.

A native manifest's ``references`` name files the snapshot uses outside its own folder,
each by its path relative to the lineage's folder (``snapshots/{stream}/{partition}/``):
``shared/{name}`` (the lineage's shared folder) or ``{lsn:020d}-{id}/{name}`` (an earlier
snapshot's own file). The ledger keeps each snapshot's reference paths (its ``SNAP#`` item
and ``SnapshotRegistered`` event), so GC learns what is referenced without reading a
manifest.

Reachability: a file is *live* while a REGISTERED snapshot holds it (its own folder) or
references it. GC deletes an EXPIRING snapshot's own files and its references less every
live key; the orphan sweep deletes a file of ``shared/`` (or of a folder GC already
emptied of its snapshot) only when nothing live references it and it is older than the
grace window.

Registration refuses a reference to a file GC may be deleting: one that an EXPIRING or
DELETED snapshot held or referenced and no REGISTERED one does. The decision reads the
records the references name (``related_sort_keys``), under the lineage's version, so a
registration and GC's marking of a snapshot EXPIRING are ordered: GC marks first and then
deletes only what no snapshot registered up to its mark references, and a registration
after the mark sees the snapshot EXPIRING.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from snapledger.layout import LSN_WIDTH, MANIFEST_NAME, ULID_PATTERN, path_problem
from snapledger.limits import MAX_NEW_SHARED_FILE_AGE_S
from snapledger.models.ledger import SnapshotRecord, SnapshotStatus, snapshot_sort_key

#: The lineage's folder of files several snapshots share (``snapshots/{s}/{p}/shared/``).
SHARED_FOLDER = "shared"
_FOLDER_RE = re.compile(rf"^(?P<lsn>[0-9]{{{LSN_WIDTH}}})-(?P<id>{ULID_PATTERN})$")
#: The statuses whose references and files GC may be deleting.
_COLLECTING = (SnapshotStatus.EXPIRING, SnapshotStatus.DELETED)


def reference_problem(path: str, own_folder: str) -> str | None:
    """Why ``path`` (relative to the lineage's folder) is no file a snapshot whose folder is
    ``own_folder`` may reference, or None."""
    problem = path_problem(path)
    if problem is not None:
        return problem
    folder, slash, name = path.partition("/")
    if not slash:
        return "it names no file under shared/ or an earlier snapshot's folder"
    if name.rpartition("/")[2] == MANIFEST_NAME:
        return "a snapshot's manifest is not a file another snapshot can use"
    if folder == own_folder:
        return "it is in the snapshot's own folder: list it under files, relative to it"
    if folder != SHARED_FOLDER and _FOLDER_RE.match(folder) is None:
        return f"{folder!r} is neither shared/ nor a snapshot's folder ({{lsn:020d}}-{{id}})"
    return None


def owner_sort_key(path: str) -> str | None:
    """The sort key of the snapshot whose own folder holds ``path``; None for ``shared/``."""
    match = _FOLDER_RE.match(path.partition("/")[0])
    return None if match is None else snapshot_sort_key(int(match["lsn"]), match["id"])


def related_sort_keys(paths: Sequence[str], live: Iterable[SnapshotRecord]) -> tuple[str, ...]:
    """The records a registration of these references decides on: each owner folder's
    snapshot, and every record (of ``live``: the lineage's REGISTERED, EXPIRING and REJECTED
    ones) referencing one of the same paths."""
    wanted = set(paths)
    keys = {key for path in paths if (key := owner_sort_key(path)) is not None}
    keys |= {r.sort_key for r in live if r.references and wanted.intersection(r.references)}
    return tuple(sorted(keys))


def reference_refusals(
    paths: Sequence[str],
    own_sort_key: str,
    records: Mapping[str, SnapshotRecord],
    *,
    aged: Collection[str] = (),
) -> list[str]:
    """Why each reference (``references[i]``) may not be registered, from the lineage's
    ``records`` the decision read (``related_sort_keys``); empty when all may. ``aged``:
    the ``shared/`` references written long before the manifest, refused unless a
    registered snapshot references them (the orphan sweep may be deleting them)."""
    others = [r for key, r in records.items() if key != own_sort_key]
    live = {p for r in others if r.status is SnapshotStatus.REGISTERED for p in r.references or ()}
    collecting = {p: r for r in others if r.status in _COLLECTING for p in r.references or ()}
    problems = []
    for index, path in enumerate(paths):
        if path in live:
            continue
        owner_key = owner_sort_key(path)
        owner = None if owner_key is None else records.get(owner_key)
        if owner is not None and owner.status is SnapshotStatus.REGISTERED:
            continue  # a registered snapshot's own file: GC deletes none while it is
        holder = collecting.get(path) or (
            owner if owner is not None and owner.status in _COLLECTING else None
        )
        where = f"references[{index}] {path!r}"
        if holder is not None:
            problems.append(
                f"{where} is being collected by GC (snapshot {holder.snapshot_id}, which "
                f"used it, is {holder.status.value} and no registered snapshot references "
                "it): upload the file again under a new name and reference that"
            )
        elif owner_key is not None:
            state = "not registered" if owner is None else owner.status.value
            problems.append(
                f"{where} is in the folder of a snapshot that is {state}: reference only "
                "the files of registered snapshots, or upload it under shared/"
            )
        elif path in aged:
            problems.append(
                f"{where} was written more than {MAX_NEW_SHARED_FILE_AGE_S // 60} minutes "
                "before its registration and no registered snapshot references it: GC's "
                "orphan sweep may be deleting it; upload it again under a new name"
            )
    return problems


def aged_shared(written: Iterable[tuple[str, datetime]], now: datetime) -> set[str]:
    """The ``shared/`` paths written more than ``MAX_NEW_SHARED_FILE_AGE_S`` before ``now``
    (the registry's clock at the decision): GC's deletion leaves a shared file younger than
    twice that to the orphan sweep, whose grace window is at least an hour, so a file no
    registered snapshot references is safe to reference only while it is younger."""
    max_age = timedelta(seconds=MAX_NEW_SHARED_FILE_AGE_S)
    return {path for path, at in written if now - at > max_age}


def owners_referenced(records: Iterable[SnapshotRecord]) -> set[str]:
    """The sort keys of the snapshots whose own folders ``records`` reference."""
    return {
        key for r in records for p in r.references or () if (key := owner_sort_key(p)) is not None
    }


def live_keys(records: Iterable[SnapshotRecord], lineage_prefix: str) -> set[str]:
    """Every key a REGISTERED snapshot of the lineage references (outside its own folder)."""
    return {
        lineage_prefix + path
        for r in records
        if r.status is SnapshotStatus.REGISTERED
        for path in r.references or ()
    }


def referenced_keys(records: Iterable[SnapshotRecord], lineage_prefix: str) -> set[str]:
    """Every key a REGISTERED or EXPIRING snapshot references: what the orphan sweep leaves
    (an EXPIRING one's are GC's own to delete, once nothing live references them)."""
    return {
        lineage_prefix + path
        for r in records
        if r.status in (SnapshotStatus.REGISTERED, SnapshotStatus.EXPIRING)
        for path in r.references or ()
    }


def keys_to_delete(
    record: SnapshotRecord,
    own_keys: Iterable[str],
    lineage_prefix: str,
    *,
    live: Collection[str],
    statuses: Mapping[str, SnapshotStatus],
    taken: set[str],
) -> list[str]:
    """An EXPIRING snapshot's keys GC deletes: its own folder's (``own_keys``, as listed)
    and its references, less every ``live`` key, every reference into the folder of a
    snapshot GC is not collecting (``statuses``: sort key -> status, of every folder
    referenced; a registered one's files are its own, and an owner ``statuses`` does not
    know is left to the orphan sweep), and those another unit of the run already took
    (``taken``, updated)."""

    def collectable(path: str) -> bool:
        owner = owner_sort_key(path)
        return owner is None or statuses.get(owner) in _COLLECTING

    references = [lineage_prefix + p for p in record.references or () if collectable(p)]
    wanted = dict.fromkeys([*own_keys, *references])
    chosen = [k for k in wanted if k not in live and k not in taken]
    taken.update(chosen)
    return chosen
