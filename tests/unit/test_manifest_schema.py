from __future__ import annotations

from pathlib import Path

from snapledger.models.schema_export import SCHEMA_PATH, render

REPO = Path(__file__).resolve().parents[2]


def test_published_schema_is_generated_from_the_model():
    # If this fails, run `make schema` and commit docs/manifest-v1.schema.json.
    assert (REPO / SCHEMA_PATH).read_text() == render()


def test_published_pointer_schema_is_generated_from_the_model():
    from snapledger.models.schema_export import POINTER_SCHEMA_PATH, render_pointer

    # If this fails, run `make schema` and commit docs/latest-pointer-v1.schema.json.
    assert (REPO / POINTER_SCHEMA_PATH).read_text() == render_pointer()


def test_published_generation_pointer_schema_is_generated_from_the_model():
    from snapledger.models.schema_export import (
        GENERATION_POINTER_SCHEMA_PATH,
        render_generation_pointer,
    )

    # If this fails, run `make schema` and commit docs/generation-pointer-v1.schema.json.
    assert (REPO / GENERATION_POINTER_SCHEMA_PATH).read_text() == render_generation_pointer()
