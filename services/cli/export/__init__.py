"""``hindsight export`` and ``hindsight import``: the file format (:mod:`.fileformat`), the export that
writes a bank as it reads it (:mod:`.dump`), and the import that writes it back in batches sized by bytes
(:mod:`.load`). The commands themselves are in :mod:`hindsight.cli.export_import`."""
