"""The converter's one error type: a VMI that cannot become a domain, naming the field at fault."""

from __future__ import annotations


class ConversionError(ValueError):
    """``field`` is the VMI field path (``spec.domain.devices.disks[1]``); ``message`` is KubeVirt's text."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message
