"""``python -m clobkit._bench``: the same as ``clobkit bench``."""

from .cli import main

raise SystemExit(main())
