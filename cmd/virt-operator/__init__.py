"""Entrypoint of virt-operator: parse flags, wire the application from ``kubevirt.virt_operator``, run."""

import sys

from kubevirt.service import binary
from kubevirt.virt_operator import app


@binary("virt-operator", "Installs and upgrades KubeVirt from a KubeVirt custom resource.")
def main() -> None:
    sys.exit(app.run())
