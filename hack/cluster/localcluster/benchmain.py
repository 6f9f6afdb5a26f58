"""What a cluster benchmark's command does around its measurements: refuse without a running cluster,
report a failed run in one line, save the results as JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from . import cluster as localcluster
from .handle import Cluster
from .layout import Layout
from .timing import say


def run_and_save(
    tool: str,
    results_file: Path,
    measure: Callable[[Cluster], object],
    errors: tuple[type[Exception], ...] = (RuntimeError, AssertionError),
) -> int:
    """Runs ``measure`` on the running local cluster and saves what it returns to ``results_file``; the
    exit code: 0, 1 when the run failed with one of ``errors``, 2 without a cluster."""
    layout = Layout.from_environment()
    if not localcluster.running(layout):
        print("no local cluster is running: start one with hack/cluster-up", file=sys.stderr)
        return 2
    try:
        results = measure(Cluster(layout))
    except errors as error:
        print(f"{tool} failed: {error}", file=sys.stderr)
        return 1
    results_file.write_text(json.dumps(results, indent=2) + "\n")
    say(f"saved {results_file}")
    return 0
