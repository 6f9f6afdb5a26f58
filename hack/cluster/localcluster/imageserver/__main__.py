"""python -m localcluster.imageserver deploy|remove|urls|provider NAMESPACE

deploy: builds the test image server's image (cached), imports it into every running node and deploys the
server; prints the URL of each file and registry image it serves. remove: deletes it. urls: prints the URLs
only. provider: deploys the stand-in for the disks-images-provider of KubeVirt's own functional tests into
NAMESPACE (KubeVirt's) and waits until it is ready.
"""

from __future__ import annotations

import sys

from .. import cluster, images
from ..handle import Cluster
from ..layout import Layout
from . import IMAGE, deploy, provider, registry_url, remove, url
from .files import file_names, registry_images


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "urls" and len(argv) == 1:
        _print_urls()
        return 0
    plain = command in ("deploy", "remove") and len(argv) == 1
    if not (plain or (command == "provider" and len(argv) == 2)):
        print(__doc__, file=sys.stderr)
        return 2
    layout = Layout.from_environment()
    if not cluster.running(layout):
        print(f"imageserver {command}: the local cluster is not running (hack/cluster-up)", file=sys.stderr)
        return 1
    try:
        if command == "remove":
            remove(Cluster(layout))
            return 0
        images.import_everywhere(layout, images.Builder(layout).build([IMAGE]))
        if command == "provider":
            handle = Cluster(layout)
            handle.apply(*provider.objects(argv[1]))
            handle.kubectl("rollout", "status", "-n", argv[1], f"daemonset/{provider.NAME}", "--timeout=120s")
            return 0
        deploy(Cluster(layout))
    except (RuntimeError, AssertionError) as error:
        print(f"imageserver {command} failed: {error}", file=sys.stderr)
        return 1
    _print_urls()
    return 0


def _print_urls() -> None:
    for name in file_names():
        print(url(name))
    for image in registry_images():
        print(registry_url(image))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
