"""python -m localcluster.imageserver deploy|remove|urls

deploy: builds the test image server's image (cached), imports it into every running node and deploys the
server; prints the URL of each file and registry image it serves. remove: deletes it. urls: prints the URLs
only.
"""

from __future__ import annotations

import sys

from .. import cluster, images
from ..handle import Cluster
from ..layout import Layout
from . import IMAGE, deploy, registry_url, remove, url
from .files import file_names, registry_images


def main(argv: list[str]) -> int:
    command = argv[0] if len(argv) == 1 else ""
    if command == "urls":
        _print_urls()
        return 0
    if command not in ("deploy", "remove"):
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
