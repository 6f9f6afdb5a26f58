"""The VM's manifest ConfigMap as mounted into the exporter pod: one file per key.

Every read goes through :mod:`kubevirt.safepath` with the mount as the root (the kubelet's ``..data``
links resolve, nothing outside the mount is reached) and within the API server's object size limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubevirt import safepath
from kubevirt.export.paths import (
    DATA_VOLUME_KEY_PREFIX,
    EXPORT_NAME_KEY,
    EXTERNAL_CA_KEY,
    EXTERNAL_HOST_KEY,
    INTERNAL_CA_KEY,
    INTERNAL_HOST_KEY,
    VM_MANIFEST_KEY,
)
from kubevirt.input_limits import MAX_OBJECT_BYTES, load_json

JSON = dict[str, Any]


class ManifestData:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def text(self, key: str) -> str:
        """The value of ``key``; OSError (FileNotFoundError when the key is absent) when unreadable."""
        data = safepath.read_file(self.directory, key, limit=MAX_OBJECT_BYTES)
        return data.decode("utf-8", "replace")

    def object(self, key: str) -> JSON:
        """The JSON object stored under ``key``; ValueError when it is not one."""
        value = load_json(self.text(key), key)
        if not isinstance(value, dict):
            raise ValueError(f"{key}: a JSON object is expected, not {type(value).__name__}")
        return value

    def export_name(self) -> str:
        return self.text(EXPORT_NAME_KEY)

    def host(self, *, internal: bool) -> str:
        """Where the export is reached from inside the cluster, or through the export proxy."""
        return self.text(INTERNAL_HOST_KEY if internal else EXTERNAL_HOST_KEY)

    def ca_config_map(self, *, internal: bool) -> JSON:
        return self.object(INTERNAL_CA_KEY if internal else EXTERNAL_CA_KEY)

    def virtual_machine(self) -> JSON:
        return self.object(VM_MANIFEST_KEY)

    def data_volume(self, claim_name: str) -> JSON | None:
        """The DataVolume written for a claim no template makes; None when there is none."""
        key = DATA_VOLUME_KEY_PREFIX + claim_name
        if not safepath.plain_name(key):
            return None  # a name that is no single file name never names a key
        try:
            return self.object(key)
        except FileNotFoundError:
            return None
