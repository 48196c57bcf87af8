"""How many Spark partitions to give a job so that each lineage partition gets a task.

The job shuffles its result by the ``partition`` column so that one Spark task holds one
whole lineage partition and writes it as one key-sorted file. Spark routes a row to
``pmod(murmur3(partition, seed 42), n)``; with ``n`` = the number of lineage partitions,
collisions would leave some tasks with two partitions and others idle. So we mirror
Spark's hash (tests/jobs/test_routing.py checks it against Spark's ``hash``) and pick the
smallest ``n`` that spreads the job's partitions most evenly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

_MASK = 0xFFFFFFFF
_SPARK_HASH_SEED = 42


def spark_hash_int(value: int, seed: int = _SPARK_HASH_SEED) -> int:
    """Spark's ``Murmur3_x86_32.hashInt``: the ``hash()`` of one int column, signed."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _MASK

    k1 = (value & _MASK) * 0xCC9E2D51 & _MASK
    k1 = rotl(k1, 15) * 0x1B873593 & _MASK
    h1 = (seed & _MASK) ^ k1
    h1 = (rotl(h1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def spark_partition_of(value: int, num_partitions: int) -> int:
    return spark_hash_int(value) % num_partitions  # Python's % is Spark's pmod here


def shuffle_partitions_for(partitions: Sequence[int]) -> int:
    """The smallest n in [P, 4P] whose busiest task holds the fewest lineage partitions."""
    count = len(partitions)
    best_n, best_load = count, count + 1
    for n in range(count, 4 * count + 1):
        load = max(Counter(spark_partition_of(p, n) for p in partitions).values())
        if load < best_load:
            best_n, best_load = n, load
        if load == 1:
            break
    return best_n
