"""The orders the Kafka tests produce and the totals they must add up to."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable


def orders(seed: int, count: int, customers: int = 40) -> list[tuple[str, str]]:
    """``count`` (customer id, amount) records, the same for the same ``seed``."""
    rng = random.Random(seed)
    return [(f"c{rng.randrange(customers):03d}", str(rng.randint(-50, 500))) for _ in range(count)]


def totals(*batches: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Each customer's sum, as the application computes it ("delete" deletes the key)."""
    summed: Counter[str] = Counter()
    for batch in batches:
        for customer, amount in batch:
            if amount == "delete":
                summed.pop(customer, None)
            else:
                summed[customer] += int(amount)
    return dict(summed)
