"""The ``erp-ai`` console script: check the ``bench`` extra, then run :func:`benchmarks.cli.app.main`.

:mod:`benchmarks.cli.app` imports typer, rich and PyYAML at its top. On an engine-only install
(``pip install erp-ai-harness``) that import would end in a traceback; this module imports nothing but the
standard library and :mod:`shared.extras` first, so the user reads one line naming the extra instead.
"""

from __future__ import annotations

import sys

from shared.errors import ConfigurationError
from shared.extras import require_extra


def main(argv: list[str] | None = None) -> None:
    """Run ``erp-ai``; without the ``bench`` extra, print one line naming it and exit with code 2."""
    try:
        require_extra("bench", "The erp-ai command")
    except ConfigurationError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    from benchmarks.cli.app import main as cli_main

    cli_main(argv)


if __name__ == "__main__":
    main()
