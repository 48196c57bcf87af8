"""The ``snapledger`` command line: operators' access to a deployment or the local runtime."""
