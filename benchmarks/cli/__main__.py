"""``python -m benchmarks.cli``: the ``erp-ai`` console script."""

from benchmarks.cli.entry import main

main()
