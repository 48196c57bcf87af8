"""Write docs/manifest-v1.schema.json from the model: ``make schema``."""

from __future__ import annotations

import json
from pathlib import Path

from snapledger.models.manifest import manifest_json_schema

SCHEMA_PATH = Path("docs/manifest-v1.schema.json")


def render() -> str:
    return json.dumps(manifest_json_schema(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_text(render())
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
