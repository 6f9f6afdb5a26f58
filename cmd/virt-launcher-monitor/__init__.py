"""Entrypoint of virt-launcher-monitor: the compute container's PID 1, running virt-launcher."""

import sys

from kubevirt.log import configure
from kubevirt.virt_launcher import COMPONENT, monitor


def main() -> None:
    # The monitor takes no flags of its own except --keep-after-failure: all others are the launcher's.
    configure(COMPONENT)
    sys.exit(monitor.run(sys.argv[1:]))
