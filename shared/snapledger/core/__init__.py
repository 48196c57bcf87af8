"""The pure core: no I/O, no AWS. Every business rule lives here and is tested here."""
