"""virt-launcher's application object: what runs once the flags are parsed."""

from __future__ import annotations

from kubevirt.log import get_logger


def run() -> int:
    """Start virt-launcher. Returns the process exit code."""
    log = get_logger()
    log.info("virt-launcher starting")
    log.error("virt-launcher has no running mode yet")
    return 1
