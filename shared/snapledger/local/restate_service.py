"""The Restate service the tests run: a virtual object with keyed state.

`Store/{key}/put` sets the key's value, `Store/{key}/get` answers it (None if unset). Served
by hypercorn (`python -m hypercorn tests/restate/service.py:app`), registered with the
server's admin API, called on its ingress.
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
