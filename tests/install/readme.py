"""The README's install section, as the tests run it."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Install the CLI or the client library"


def install_lines() -> list[str]:
    """The commands of the first ``bash`` block of the README's install section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, f"no bash block under {SECTION!r} in README.md"
    return [line for line in block.group(1).splitlines() if line.strip()]
