"""Entrypoint of virt-launcher: parse flags, wire the application from ``kubevirt.virt_launcher``, run."""

import sys

from kubevirt.service import binary
from kubevirt.virt_launcher import app


@binary("virt-launcher", "Runs in each VMI's pod and owns the libvirt domain there.")
def main() -> None:
    sys.exit(app.run())
