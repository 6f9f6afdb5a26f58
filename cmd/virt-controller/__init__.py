"""Entrypoint of virt-controller: parse flags, wire the application from ``kubevirt.virt_controller``, run."""

import sys

from kubevirt.service import binary
from kubevirt.virt_controller import app


@binary("virt-controller", "Reconciles VMs, VMIs, virt-launcher pods, migrations, replica sets and pools.")
def main() -> None:
    sys.exit(app.run())
