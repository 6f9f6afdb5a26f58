"""python -m localcluster up [--nodes N]|down|status|kubeconfig|bench|build-images [BIN...]|kubevirt-up [VM]
                         |suite-guests

up --nodes N (or KUBEVIRT_CLUSTER_NODES=N): N nodes, or the missing ones added to a running cluster.
suite-guests: the compatible test guests tagged as the guest images KubeVirt's own functional tests pull.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import bench, cluster, images, sharing, up
from .layout import NODES_ENV, Layout, requested_nodes


def main(argv: list[str]) -> int:
    layout = Layout.from_environment()
    command = argv[0] if argv else "status"
    if command == "up":
        try:
            count = _node_count(argv[1:])
            with sharing.locked(sharing.cluster_lock(layout)):
                cluster.up(layout, count)
        except (RuntimeError, ValueError) as error:
            print(f"cluster-up failed: {error}", file=sys.stderr)
            return 1
        return 0
    if command == "down":
        with sharing.locked(sharing.cluster_lock(layout)):
            left = cluster.down(layout)
        for item in left:
            print(f"LEFT OVER: {item}", file=sys.stderr)
        return 1 if left else 0
    if command == "status":
        is_running = cluster.running(layout)
        print("running" if is_running else "not running")
        return 0 if is_running else 3
    if command == "build-images":
        return _build_images(layout, argv[1:])
    if command == "bench":
        return bench.run(layout)
    if command == "kubevirt-up":
        return up.run(layout, Path(argv[1]).resolve() if len(argv) > 1 else up.DEFAULT_VM)
    if command == "suite-guests":
        for name in images.tag_suite_guests(layout):
            print(name)
        return 0
    if command == "kubeconfig":
        print(layout.admin_kubeconfig)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


def _node_count(args: list[str]) -> int:
    if not args:
        return requested_nodes()
    if len(args) == 2 and args[0] == "--nodes":
        os.environ[NODES_ENV] = args[1]
        return requested_nodes()
    raise ValueError(f"up: unexpected arguments {' '.join(args)} (expected --nodes N)")


def _build_images(layout: Layout, binaries: list[str]) -> int:
    builder = images.Builder(layout)
    try:
        built = builder.build(binaries or None)
    except RuntimeError as error:
        print(f"build-images failed: {error}", file=sys.stderr)
        return 1
    for image in built:
        print(f"{image.name:<44} {image.size / 1e6:8.1f} MB  {image.digest}")
    if cluster.running(layout):
        for node, imported in images.import_everywhere(layout, built).items():
            print(f"imported into {node}: {', '.join(imported) or 'nothing new'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
