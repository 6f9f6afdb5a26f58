"""The stable firmware UUID of a VMI started from a VM: a name-based SHA-1 UUID of the VM's name."""

from __future__ import annotations

import uuid
from typing import Final

# KubeVirt's fixed namespace for these UUIDs; the same VM name always yields the same UUID.
_FIRMWARE_UUID_NAMESPACE: Final = uuid.UUID("6a1a24a1-4061-4607-8bf4-a3963d0c5895")


def calculate_legacy_uuid(name: str) -> str:
    """What KubeVirt's ``CalculateLegacyUUID`` returns (RFC 4122 version 5)."""
    return str(uuid.uuid5(_FIRMWARE_UUID_NAMESPACE, name))
