"""Helpers shared by the test tiers and the benchmarks, never shipped with the project.

pytest puts ``tests/lib`` on the import path (``pythonpath`` in pyproject.toml); the benchmarks that run
as scripts add it themselves.
"""
