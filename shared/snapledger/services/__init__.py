"""Services: load → decide → commit, and the I/O around the pure core."""
