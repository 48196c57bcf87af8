"""Pictures of lineages, drawn with matplotlib from query answers: SVG, PNG, or an HTML page.

- ``timeline``: a lineage's snapshots by registry time (x, a date axis in UTC) and LSN (y),
  coloured by status; the latest, holds and pins ringed; the trim point a dashed line; each
  job a bar from its base LSN to its target at the time it was requested;
- ``gc_plan``: a GC dry run's plan, one strip per lineage on its own LSN axis, each snapshot
  kept or deleted, shaped by its first reason.

The inputs are the JSON answers of the query and gc functions (``list``, ``latest``,
``jobs``, a dry run's ``report``), so the CLI, the demo and anyone holding those answers
draw the same picture. ``write`` picks the format by the file's suffix (``FORMATS``).

Why matplotlib: it is the long-kept standard, one wheel with no browser or JavaScript
runtime, and it writes SVG and PNG itself. Its layout engine places what a hand-written SVG
got wrong: tick locators and formatters on both axes (LSN and dates), a legend outside the
axes (constrained layout), and a saved canvas grown to hold every label (``bbox_inches=
"tight"``). No text is placed beside a mark, so no two labels can meet: each mark's id,
size, registered time and reasons are its hover text instead, a ``<title>`` in its SVG
group (``svg.fonttype="none"`` keeps all text as ``<text>``). Vega-Lite (altair and
vl-convert) would bring a bundled JavaScript engine for a static export; plotly a 3 MB
script per page and a browser (kaleido) for PNG. matplotlib is in the ``cli`` extra only,
imported when a picture is first drawn (``snapledger --help`` does not load it; without it a
picture fails with ``snapledger.extras.MissingExtraError`` naming the extra), and, like
all of ``snapledger.cli``, never in the Lambda package.

Every mark carries a ``class`` and ``data-`` attributes naming what it is (``snapshot``,
``status-…``, ``latest``, ``held``, ``pinned``, ``job``, ``trim``, ``plan-keep``,
``plan-delete``, ``lineage``), so tests and tools can read a picture back.
"""

from __future__ import annotations

from snapledger.cli.pictures.canvas import FORMATS, Mark, Picture, write
from snapledger.cli.pictures.lineage import timeline
from snapledger.cli.pictures.plan import gc_plan

__all__ = [
    "FORMATS",
    "Mark",
    "Picture",
    "gc_plan",
    "timeline",
    "write",
]
