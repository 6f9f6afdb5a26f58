"""python -m localcluster up|down|status|kubeconfig|bench|build-images [BINARY...]|kubevirt-up [VM]"""

from __future__ import annotations

import sys
from pathlib import Path

from . import bench, cluster, images, sharing, up
from .layout import Layout


def main(argv: list[str]) -> int:
    layout = Layout.from_environment()
    command = argv[0] if argv else "status"
    if command == "up":
        try:
            with sharing.locked(sharing.cluster_lock(layout)):
                cluster.up(layout)
        except RuntimeError as error:
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
    if command == "kubeconfig":
        print(layout.admin_kubeconfig)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


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
        imported = images.import_archives(layout, [(i.name, i.archive, i.digest) for i in built])
        print(f"imported into the cluster: {', '.join(imported) or 'nothing new'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
