"""Entrypoint of virtctl."""

from kubevirt.virtctl.root import root as main

__all__ = ["main"]
