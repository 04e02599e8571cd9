"""``clobkit order-ids``: the file paths, one straight line (private).

One reader per format makes each item of the input an ``Orders``
(``csv_exact``, ``csv_fast``, ``jsonl``, ``parquet``); one hashing stage
adds its ids (``hashing``); one writer per format makes the output's piece
(``write_csv``, ``write_jsonl``, ``write_parquet``, with ``convert``'s table
and ``outputs``' files); ``run`` is the driver that checks the paths and
runs the line in ``stages``. ``rows`` holds what they share (layouts, the
reading of values, the batch types), ``process`` the command's own process
(numpy blocked, pyarrow imported past the block). Nothing here is imported
by ``import clobkit``.
"""
