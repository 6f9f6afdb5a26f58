"""virt-operator's application object: what runs once the flags are parsed."""

from __future__ import annotations

from kubevirt.log import get_logger


def run() -> int:
    """Start virt-operator. Returns the process exit code."""
    log = get_logger()
    log.info("virt-operator starting")
    log.error("virt-operator has no running mode yet")
    return 1
