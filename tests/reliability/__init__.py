"""Reliability harnesses: crashes, corruption, fuzzing and bad input (issue 8).

The modules without a ``test_`` prefix are the harnesses themselves
(dataset recipes, mutations, writer programs, fuzz targets, the bad-input
catalogue); the ``test_*`` modules run them at a small size in the default
run and at the published size with ``pytest --stress``.  ``benchmarks/
reliability.py`` runs the same campaigns from the command line and prints
the figures that ``docs/reliability.md`` publishes.
"""
