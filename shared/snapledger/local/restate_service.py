"""The Restate service the tests and ``make demo-restate`` run: a virtual object with keyed
state.

`Store/{key}/put` sets the key's value, `Store/{key}/get` answers it (None if unset). Served
by hypercorn in its own process (`python -m hypercorn .../restate_service.py:app`, see
restate_cluster.py), registered with the server's admin API, called on its ingress. Only
that process imports it: restate-sdk and hypercorn are development dependencies, and
``snapledger.local`` is never in the Lambda package.
"""

from __future__ import annotations

import restate

store = restate.VirtualObject("Store")


@store.handler()
async def put(ctx: restate.ObjectContext, value: str) -> None:
    ctx.set("value", value)


@store.handler(kind="shared")
async def get(ctx: restate.ObjectSharedContext) -> str | None:
    return await ctx.get("value", type_hint=str)


app = restate.app(services=[store])
