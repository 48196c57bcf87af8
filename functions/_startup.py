"""Imported by every handler between its libraries and snapledger: freezes the objects the
libraries loaded (``gc.freeze``), so the cyclic garbage collector stops walking them.

Importing snapledger creates a few hundred classes, enough allocations to set off a
collection of the oldest generation, which walks every object the collector tracks, most of
them made by boto3, botocore, pydantic and Powertools just before. On the Lambda runtime's
Python (3.12) that one collection was a large part of snapledger's own import (what it
cost: README, "A function's cold start"; ``make bench --only handlers``).
Frozen objects are moved to a permanent generation that collections skip, so freezing costs
next to nothing, and every later collection in the function's life is shorter by the same
walk.

What it gives up: an object frozen is never collected. The libraries' modules, classes and
functions live as long as the process anyway; garbage cycles not yet collected when it runs
(a few, from the libraries' imports) are kept. Python's documentation describes the call
for servers that fork once their code is loaded; what it does for them, collections that
skip what was loaded, is what a function wants from it too.
"""

import gc

gc.freeze()
