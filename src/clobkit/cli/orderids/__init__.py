"""``clobkit order-ids``: the file paths, one pipeline (private).

``run`` is the runner (paths, batches, progress, summary); ``rows`` the
layouts, one parsed batch and ``hash_batch``; ``stages`` the reader thread,
pool and in-order writer every format shares; ``csv_exact``, ``csv_fast``,
``jsonl`` and ``parquet`` the formats; ``process`` the command's own process
(numpy blocked, pyarrow imported past the block). Nothing here is imported by
``import clobkit``.
"""
