"""The ``erp-ai`` commands, one module per command group; :mod:`benchmarks.cli` registers them on the app."""
