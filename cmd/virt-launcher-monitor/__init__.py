"""Entrypoint of virt-launcher-monitor: the compute container's PID 1, running virt-launcher."""

import sys
from typing import Any

SIMULATE_CRASH = "--simulate-crash"


def main() -> None:
    # KubeVirt's Go launcher dies of --simulate-crash before the kubelet ever reports the compute
    # container running, so its VMI fails while Scheduling. Two Python start-ups (this and the launcher)
    # take long enough for the VMI to reach Scheduled first, and only virt-handler's three-minute wait for
    # a launcher socket would fail it then: the crash happens here, before any import.
    if SIMULATE_CRASH in sys.argv[1:]:
        sys.exit("virt-launcher: simulated crash (--simulate-crash)")
    from kubevirt.virt_launcher import monitor

    # The monitor takes no flags of its own except --keep-after-failure: all others are the launcher's.
    sys.exit(monitor.run(sys.argv[1:], logger=_logger))


def _logger() -> Any:
    """The monitor's log, configured when it first logs (see ``monitor.run``)."""
    sys.modules.setdefault("rich", None)  # type: ignore[arg-type]  # JSON only: no pretty-printing library
    from kubevirt.log import configure, get_logger
    from kubevirt.virt_launcher import COMPONENT

    configure(COMPONENT)
    return get_logger(component=COMPONENT)
