"""hack/bench-density [N] [--faults]: the density benchmark (and fault run) on the local cluster."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import cluster as localcluster
from .. import install
from ..handle import Cluster
from ..layout import Layout
from . import report, run, workload

# 10 TCG guests of 128 MiB and their launchers take ~4 GiB of 24; their boots compete for 2 CPUs.
DEFAULT_COUNT = 10


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hack/bench-density", description=__doc__)
    p.add_argument(
        "count", nargs="?", type=int, default=DEFAULT_COUNT, help=f"objects (default {DEFAULT_COUNT})"
    )
    p.add_argument("--faults", action="store_true", help="kill -9 the components during the run and check")
    p.add_argument("--kinds", default="vmi,vm", help="rounds to run, in order (default vmi,vm)")
    p.add_argument(
        "--network",
        choices=("masquerade", "none"),
        default="masquerade",
        help="the pod network through masquerade (default, as KubeVirt's density test), or none",
    )
    p.add_argument("--cpu", default="100m", help="CPU request (and limit) of each VMI")
    p.add_argument("--memory", default="128Mi", help="memory request and limit of each VMI")
    p.add_argument("--no-cpu-limit", action="store_true", help="request CPU without limiting it")
    p.add_argument("--interval", type=float, default=0.1, help="seconds between creations")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for a round to settle")
    p.add_argument("--steady", type=float, default=run.STEADY_SECONDS, help="seconds measured once Running")
    p.add_argument("--json", type=Path, default=Path("bench-density.json"), help="where to save the results")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    layout = Layout.from_environment()
    if not localcluster.running(layout):
        print("no local cluster is running: start one with hack/cluster-up", file=sys.stderr)
        return 2
    cluster = Cluster(layout)
    shape = workload.Shape(args.cpu, args.memory, args.network, not args.no_cpu_limit)
    rounds = [
        run.Options(args.count, kind, shape, args.interval, args.timeout, args.faults, args.steady)
        for kind in args.kinds.split(",")
    ]
    with install.present(cluster, _say):
        results = [run.Round(cluster, options, _say).run() for options in rounds]
    for result in results:
        report.show(result)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nsaved to {args.json}")
    failed = any(r.get("faults", {}).get("problems") or r["left_after_delete"] for r in results)
    return 1 if failed else 0


def _say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
