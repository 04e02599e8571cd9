"""``python -m clobkit``: the ``clobkit`` command."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    try:
        from .cli import main
    except KeyboardInterrupt:  # Ctrl-C while importing: one line, no traceback
        print("clobkit: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    raise SystemExit(main())
