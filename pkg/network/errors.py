"""The failures of pod network setup a caller can act on."""

from __future__ import annotations


class NetworkError(Exception):
    """Setting up the VMI's network failed; nothing it started is left behind."""


class NetworkConfigError(NetworkError):
    """The VMI asks for something that cannot be set up; names the VMI field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class PodNetworkError(NetworkError):
    """The pod's network is not what the binding needs (for example, the pod interface is absent)."""
