"""Write the published schemas from the models: ``make schema``.

- ``docs/manifest-v1.schema.json``: the manifest format;
- ``docs/latest-pointer-v1.schema.json``: ``latest.json``, a lineage's latest snapshot;
- ``docs/generation-pointer-v1.schema.json``: ``generation.json``, a stream's newest
  completed stream snapshot;
- ``docs/events/{type}.schema.json``: one per event type on the bus (a file for a type that
  no longer exists is removed);
- the generated parts of ``docs/events.md``: the types, their fields and their schema files
  (``event_docs``; the rest of the file is written by hand).
"""

from __future__ import annotations

import json
from pathlib import Path

from snapledger.models.event_docs import with_generated_parts
from snapledger.models.event_schema import SCHEMA_SUFFIX, event_schema_documents
from snapledger.models.manifest import manifest_json_schema
from snapledger.models.pointer import generation_pointer_json_schema, pointer_json_schema

SCHEMA_PATH = Path("docs/manifest-v1.schema.json")
POINTER_SCHEMA_PATH = Path("docs/latest-pointer-v1.schema.json")
GENERATION_POINTER_SCHEMA_PATH = Path("docs/generation-pointer-v1.schema.json")
EVENT_SCHEMA_DIR = Path("docs/events")
EVENTS_DOC_PATH = Path("docs/events.md")


def render() -> str:
    return json.dumps(manifest_json_schema(), indent=2, sort_keys=True) + "\n"


def render_pointer() -> str:
    return json.dumps(pointer_json_schema(), indent=2, sort_keys=True) + "\n"


def render_generation_pointer() -> str:
    return json.dumps(generation_pointer_json_schema(), indent=2, sort_keys=True) + "\n"


def event_schema_files() -> dict[Path, str]:
    """``{path: text}`` of every event schema, relative to the repository root."""
    return {
        EVENT_SCHEMA_DIR / f"{name}{SCHEMA_SUFFIX}": text
        for name, text in event_schema_documents().items()
    }


def main() -> None:
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_text(render())
    print(f"wrote {SCHEMA_PATH}")
    POINTER_SCHEMA_PATH.write_text(render_pointer())
    print(f"wrote {POINTER_SCHEMA_PATH}")
    GENERATION_POINTER_SCHEMA_PATH.write_text(render_generation_pointer())
    print(f"wrote {GENERATION_POINTER_SCHEMA_PATH}")
    files = event_schema_files()
    EVENT_SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    for stale in sorted(set(EVENT_SCHEMA_DIR.glob(f"*{SCHEMA_SUFFIX}")) - set(files)):
        stale.unlink()
        print(f"removed {stale}")
    for path, text in files.items():
        path.write_text(text)
    print(f"wrote {len(files)} event schemas to {EVENT_SCHEMA_DIR}/")
    doc = EVENTS_DOC_PATH.read_text(encoding="utf-8")
    EVENTS_DOC_PATH.write_text(with_generated_parts(doc), encoding="utf-8")
    print(f"wrote the generated parts of {EVENTS_DOC_PATH}")


if __name__ == "__main__":
    main()
