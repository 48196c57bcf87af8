"""The layout strategies and their catalog: a layer above the services.

Each layout is one module holding one class that satisfies ``LayoutStrategy``
(``layouts/strategy.py``): ``native.py``, ``restate.py``, ``kafka_streams.py``. A strategy
binds its layout's pure keys (``snapledger.layouts``) to the services that check and
collect its snapshots (registration's checks, GC's steps), imported at module level; the
registry (``layouts/registry.py``) names each, and the catalog (``catalog.py``) builds them
per stream from the layout map. The composition builds the catalog and
gives it to the services, which never import a strategy (docs/layouts.md).
"""
