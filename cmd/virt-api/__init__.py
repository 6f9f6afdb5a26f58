"""Entrypoint of virt-api: parse flags, wire the application from ``kubevirt.virt_api``, run."""

import sys

from kubevirt.service import binary
from kubevirt.virt_api import app


@binary("virt-api", "KubeVirt's aggregated API server: admission webhooks and subresources.kubevirt.io.")
def main() -> None:
    sys.exit(app.run())
