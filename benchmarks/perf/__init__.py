"""Performance scripts, run by hand (not timed tests).

- ``python -m benchmarks.perf.context_growth``: ``build_context`` costs the same at 10 and 10,000 messages.
- ``python -m benchmarks.perf.harness_breakdown``: the planner's harness time per turn, stage by stage.
"""
