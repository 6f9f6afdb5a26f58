"""CDI's API resources the client package does not name (the others live in kubevirt.client.resources)."""

from __future__ import annotations

from kubevirt.client.resources import Resource
from kubevirt_api.cdi.constants import GROUP, VERSION

STORAGE_PROFILES = Resource(GROUP, VERSION, "storageprofiles", "StorageProfile", namespaced=False)
