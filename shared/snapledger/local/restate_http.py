"""The local Restate node's HTTP APIs as its cluster (restate_cluster.py) calls them: the
admin API (a service deployment registered) and the ingress (the test service ``Store``'s
keyed ``put`` and ``get``, restate_service.py), one key or many at once."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from snapledger.local.restate_config import RestateHarnessError


def post(url: str, body: Any = None, *, retry_s: float = 30) -> Any:
    """POST JSON (no body and no content-type when body is None); retry while the
    server is not serving yet (connection refused, 5xx), raise on anything else."""
    data = None if body is None else json.dumps(body).encode()
    headers = {} if body is None else {"content-type": "application/json"}
    deadline = time.monotonic() + retry_s
    while True:
        request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1 built here
            url, data=data, method="POST", headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                raw = response.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            if error.code < 500 or time.monotonic() > deadline:
                raise RestateHarnessError(f"POST {url}: {error.code} {detail}") from error
        except (urllib.error.URLError, OSError) as error:
            if time.monotonic() > deadline:
                raise RestateHarnessError(f"POST {url}: {error}") from error
        time.sleep(0.2)


def register_deployment(admin_url: str, service_url: str) -> None:
    """Register the service at ``service_url`` with the admin API; it must offer ``Store``."""
    body = {"uri": service_url, "use_http_11": True}
    answer = post(admin_url + "/deployments", body, retry_s=10)
    names = [service["name"] for service in answer["services"]]
    if names != ["Store"]:
        raise RestateHarnessError(f"registration answered services {names}, want ['Store']")


class StoreClient:
    """The ``Store`` service's keys through the ingress at ``ingress_url``."""

    def __init__(self, ingress_url: str) -> None:
        self.ingress_url = ingress_url

    def put(self, key: str, value: str) -> None:
        post(f"{self.ingress_url}/Store/{key}/put", value)

    def get(self, key: str) -> str | None:
        value = post(f"{self.ingress_url}/Store/{key}/get")
        return None if value is None else str(value)

    def put_many(self, values: dict[str, str], *, workers: int = 8) -> None:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda item: self.put(*item), values.items()))

    def get_many(self, keys: Iterable[str], *, workers: int = 8) -> dict[str, str | None]:
        keys = list(keys)
        with ThreadPoolExecutor(workers) as pool:
            return dict(zip(keys, pool.map(self.get, keys), strict=True))

    def wait_every_key(self, values: Mapping[str, str], *, within_s: float = 90) -> float:
        """Seconds until every key answers its value in ``values`` (a partition still
        restoring answers nothing, or times out, until it recovers); RestateHarnessError
        with the first wrong ones after ``within_s``."""
        started = time.monotonic()
        wrong: dict[str, Any] = {}
        while time.monotonic() < started + within_s:
            try:
                answered = self.get_many(values)
            except (RestateHarnessError, OSError, ValueError) as exc:  # not serving yet
                wrong = {"error": repr(exc)}
            else:
                wrong = {k: v for k, v in answered.items() if v != values[k]}
                if not wrong:
                    return time.monotonic() - started
            time.sleep(0.5)
        raise RestateHarnessError(f"keys still wrong after {within_s}s: {list(wrong.items())[:5]}")
