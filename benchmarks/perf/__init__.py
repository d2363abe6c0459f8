"""Performance scripts (run by hand, not timed tests): ``python -m benchmarks.perf.context_growth``."""
