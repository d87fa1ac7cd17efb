"""The bcolzx on-disk format in one place, mirroring docs/format section by section.

- :mod:`~bcolzx._format.layout`: names, versions, defaults (README §1–§2).
- :mod:`~bcolzx._format.meta`: ``meta/sizes`` and ``meta/storage`` (README §1–§2).
- :mod:`~bcolzx._format.jsonfile`: atomic small-file writes (README §3).
- :mod:`~bcolzx._format.superchunk`: the superchunk file (superchunk.md), over
  the header and index kernel :mod:`bcolzx._ext.index`.
"""
