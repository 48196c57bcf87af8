"""Run in a subprocess by tests/jobs/test_create_only.py: a Spark driver whose classpath holds
the AWS SDK for Java v2 S3 client publishes a job's files into moto's S3 server
(``AWS_ENDPOINT_URL_S3``) through ``publish_files`` and ``write_descriptor``, as a job on
EMR does; prints one JSON line of what each step did.

argv: the SDK jars' folder, the root (s3://bucket/prefix), the staged keys (comma-separated),
the final prefix and the descriptor's key. Hadoop has no ``s3://`` file system here (EMRFS
is EMR's); the job reaches S3 through the SDK for these writes, and the store's root only
needs a file system of that scheme to qualify paths: Hadoop's read-only HTTP one stands in.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from jobs.create_only import ObjectExistsError
from jobs.output import publish_files, write_descriptor
from jobs.storage import ObjectStore, StoredFile


def main() -> None:
    jars, root, staged, prefix, descriptor = sys.argv[1:6]
    classpath = ":".join(str(jar) for jar in sorted(Path(jars).glob("*.jar")))
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.driver.extraClassPath", classpath)
        .config("spark.hadoop.fs.s3.impl", "org.apache.hadoop.fs.http.HttpFileSystem")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    store = ObjectStore(spark, root)
    files = [StoredFile(key, 0) for key in staged.split(",")]
    outcome: dict[str, object] = {}
    try:
        outcome["published"] = publish_files(store, files, prefix)
    except ObjectExistsError as exists:
        outcome["published_error"] = str(exists)
    for attempt in ("descriptor", "descriptor_again"):
        try:
            write_descriptor(store, descriptor, {"attempt": attempt})
            outcome[attempt] = "written"
        except ObjectExistsError as exists:
            outcome[attempt] = str(exists)
    print(json.dumps(outcome))
    spark.stop()


if __name__ == "__main__":
    main()
