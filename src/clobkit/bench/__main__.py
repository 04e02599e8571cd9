"""``python -m clobkit.bench``: the same as ``clobkit bench``."""

from .cli import main

raise SystemExit(main())
