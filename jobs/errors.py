"""The job's errors: one base class, messages a person can act on.

The entry point prints ``str(error)`` as a single line and exits with ``exit_code``;
anything that is not a JobError is a bug and keeps its stack trace.
"""

from __future__ import annotations


class JobError(Exception):
    """A job cannot run or must stop; the message says why and names what is wrong."""

    exit_code = 1


class JobArgumentError(JobError):
    """The arguments do not describe a job that can run."""

    exit_code = 2


class ChangelogError(JobError):
    """The changelog is missing a range the job needs or holds bad data."""

    exit_code = 3


class SnapshotError(JobError):
    """A base snapshot named by the arguments cannot be used."""

    exit_code = 3
