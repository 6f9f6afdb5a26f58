"""virt-api's application object: what runs once the flags are parsed."""

from __future__ import annotations

from kubevirt.log import get_logger


def run() -> int:
    """Start virt-api. Returns the process exit code."""
    log = get_logger()
    log.info("virt-api starting")
    log.error("virt-api has no running mode yet")
    return 1
