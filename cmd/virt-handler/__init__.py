"""Entrypoint of virt-handler: parse flags, wire the application from ``kubevirt.virt_handler``, run."""

import sys

from kubevirt.service import binary
from kubevirt.virt_handler import app


@binary("virt-handler", "The node agent: drives each VMI on this node through its virt-launcher.")
def main() -> None:
    sys.exit(app.run())
