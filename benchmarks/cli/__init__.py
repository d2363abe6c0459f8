"""The ``erp-ai`` command line, apart from the benchmark's machinery it drives: :mod:`benchmarks.cli.entry`
(the console script, which checks the ``bench`` extra first), :mod:`benchmarks.cli.app` (the typer app that
registers every command) and one module per command group.

The CLI is the outermost layer: it may import every package, and nothing but its own modules imports it.
"""
