"""The canvas the pictures are drawn on: a matplotlib figure (loaded when first drawn), and
the picture it becomes, as SVG, PNG or an HTML page holding the SVG.

Every element a picture marks (a snapshot, a job, the trim line, a plan decision) is drawn
as its own matplotlib artist with a ``gid``; the SVG renderer writes it as ``<g id=gid>``,
which :meth:`Picture.svg` gives its ``class``, ``data-`` attributes and a ``<title>`` (the
hover text browsers show), so the details live in the hover, not in labels on the canvas.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from html import escape
from io import BytesIO, StringIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snapledger.extras import MissingExtraError, install_line

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure

#: The formats a picture is written as, chosen by the file's suffix.
FORMATS = (".svg", ".png", ".html")
PNG_DPI = 150
#: Text kept as ``<text>`` (searchable, hoverable, measurable), stable ids, and times drawn
#: as days since 1970 (``days``).
_RC: dict[Any, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "snapledger",
    "font.size": 9,
    "date.epoch": "1970-01-01T00:00:00",
}
_GROUP = re.compile(r'<g id="(?P<gid>[^"]+)">')
_PROLOGUE = re.compile(r"\A.*?(?=<svg)", re.DOTALL)
_PAGE_STYLE = (
    "body{margin:16px;font-family:sans-serif}svg{display:block;max-width:none}"
    "svg [data-hover]{cursor:help}svg [data-hover]:hover{filter:drop-shadow(0 0 2px #000)}"
)


@dataclass(frozen=True)
class Mark:
    """What one drawn element is: its classes and ``data-`` attributes (for tools and tests
    reading the SVG back) and the hover text that details it."""

    classes: tuple[str, ...]
    data: Mapping[str, str]
    hover: str

    def attributes(self) -> str:
        pairs = [("class", " ".join(self.classes)), ("data-hover", "")]
        pairs += [(f"data-{name}", value) for name, value in self.data.items()]
        return "".join(f' {name}="{escape(value, quote=True)}"' for name, value in pairs)


@dataclass
class Picture:
    """A drawn figure and its marks (by ``gid``); written as SVG, PNG or HTML."""

    figure: Figure
    title: str
    marks: dict[str, Mark] = field(default_factory=dict)

    def mark(self, artist: Artist, kind: str, mark: Mark) -> None:
        """Give ``artist`` an id of its own and remember what it is."""
        gid = f"{kind}-{len(self.marks)}"
        artist.set_gid(gid)
        self.marks[gid] = mark

    @cached_property
    def svg(self) -> str:
        """The SVG document: text as ``<text>``, each mark's group classed and titled."""
        buffer = StringIO()
        self._save(buffer, "svg", metadata={"Date": None})
        return _GROUP.sub(self._group, buffer.getvalue())

    def png(self) -> bytes:
        buffer = BytesIO()
        self._save(buffer, "png", dpi=PNG_DPI, metadata={"Software": None})
        return buffer.getvalue()

    def html(self) -> str:
        """A page holding the SVG inline, so each mark's ``<title>`` shows on hover."""
        return (
            f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(self.title)}</title><style>{_PAGE_STYLE}</style></head><body>\n"
            f"{_PROLOGUE.sub('', self.svg, count=1)}"
            "<p>Hover a mark for its details.</p>\n</body></html>\n"
        )

    def _save(self, target: StringIO | BytesIO, fmt: str, **options: Any) -> None:
        import matplotlib

        with matplotlib.rc_context(_RC):
            self.figure.savefig(target, format=fmt, bbox_inches="tight", pad_inches=0.2, **options)

    def _group(self, found: re.Match[str]) -> str:
        mark = self.marks.get(found["gid"])
        if mark is None:
            return found[0]
        return f'<g id="{found["gid"]}"{mark.attributes()}><title>{escape(mark.hover)}</title>'


def canvas(title: str, width: float, height: float) -> Picture:
    """An empty picture: a figure (constrained layout) of ``width`` by ``height`` inches.

    matplotlib is imported here, not with the module, so the command starts without it; the
    ``Figure`` is made directly (no pyplot), so it draws with Agg and no GUI, and no global
    figure is left behind.
    """
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as missing:
        raise MissingExtraError(
            f"drawing a picture needs matplotlib, which is not installed: {install_line('cli')}",
            name="matplotlib",
        ) from missing
    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(width, height), layout="constrained")
    return Picture(figure=figure, title=title)


def write(picture: Picture, path: str | Path, title: str | None = None) -> Path:
    """Write ``picture`` to ``path`` as its suffix says: ``.svg``, ``.png``, or ``.html`` (a
    page holding the SVG, its marks detailed on hover); ``title`` names the page."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(
            f"{target.name}: a picture is written as {' or '.join(FORMATS)}; name the file so"
        )
    if title is not None:
        picture.title = title
    target.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        target.write_bytes(picture.png())
    else:
        target.write_text(picture.html() if suffix == ".html" else picture.svg)
    return target


def when(value: str | datetime) -> datetime:
    """A registry time (ISO text or a datetime) as an aware datetime."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def days(value: str | datetime) -> float:
    """A registry time where matplotlib's date axis puts it: days since 1970 (its epoch)."""
    return when(value).timestamp() / 86400


def utc(value: str | datetime) -> str:
    """A registry time for a reader, in UTC to the second."""
    return when(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def size(total_bytes: int) -> str:
    """``total_bytes`` for a reader: 1.5 MiB."""
    amount = float(total_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if amount < 1024 or unit == "TiB":
            return f"{amount:,.0f} {unit}" if unit == "B" else f"{amount:,.1f} {unit}"
        amount /= 1024
    raise AssertionError("unreachable")
