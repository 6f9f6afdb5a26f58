"""Reading a request's VMI JSON for the pod's storage: volumes by kind, nested fields, quantities.

The long-lived launcher reads the JSON it is sent instead of the typed API (which stays in the conversion
worker); every field is checked for its type here, and a bad one is a :class:`StoragePreparationError`
naming it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubevirt import pod_paths, safepath
from kubevirt.input_limits import load_json
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError

Step = Callable[[], None]  # one file to make, after the whole request was checked


@dataclasses.dataclass(frozen=True)
class StorageDirs:
    """Where the pod's volumes are, in the launcher's view (KubeVirt's paths by default)."""

    container_disk_dir: Path = Path(pod_paths.CONTAINER_DISK_DIR)
    ephemeral_disk_dir: Path = Path(pod_paths.EPHEMERAL_DISK_DIR)
    private_dir: Path = Path(pod_paths.VIRT_PRIVATE_DIR)
    empty_disk_dir: Path = Path(pod_paths.EMPTY_DISK_DIR)  # in libvirt's runtime directory
    service_account_dir: Path = Path("/var/run/secrets/kubernetes.io/serviceaccount")
    block_device_dir: Path = Path("/dev")

    @property
    def host_disk_dir(self) -> Path:
        return self.private_dir / pod_paths.VMI_DISKS

    @property
    def cloud_init_dir(self) -> Path:
        return self.ephemeral_disk_dir / pod_paths.CLOUD_INIT_DATA

    @property
    def secret_dir(self) -> Path:
        return self.private_dir / pod_paths.SECRET


def load(raw_vmi: bytes) -> Mapping[str, Any]:
    if not raw_vmi:
        return {}  # a request without a VMI has no volumes (the command itself reports the VMI missing)
    try:
        vmi = load_json(raw_vmi, "VMI JSON")  # bounded in size and depth like every request
    except ValueError as err:
        raise StoragePreparationError(f"vmi: malformed VMI JSON: {err}") from None
    return mapping(vmi, "vmi")


def mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise StoragePreparationError(f"{field}: must be an object")
    return value


def nested(document: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    """``document[k1][k2]...``, ``{}`` where a key is absent; a present non-object names its field."""
    current = document
    for depth, key in enumerate(keys):
        value = current.get(key)
        if value is None:
            return {}
        current = mapping(value, ".".join(keys[: depth + 1]))
    return current


def items(document: Mapping[str, Any], field: str, *keys: str) -> list[tuple[int, Mapping[str, Any]]]:
    """The objects of the list at ``keys`` with their indexes (none when absent)."""
    *parents, last = keys
    value = nested(document, *parents).get(last)
    if value is None:
        return []
    if not isinstance(value, list):
        raise StoragePreparationError(f"{field}: must be a list")
    return [(index, mapping(item, f"{field}[{index}]")) for index, item in enumerate(value)]


def names(document: Mapping[str, Any], field: str, *keys: str) -> set[str]:
    """The ``name`` of each object in the list at ``keys``."""
    return {str(item.get("name")) for _, item in items(document, field, *keys)}


def volumes(vmi: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """``spec.volumes`` with their indexes; a volume whose name is no plain file name is refused."""
    out = items(vmi, "spec.volumes", "spec", "volumes")
    for index, volume in out:
        name = volume.get("name")
        if not isinstance(name, str) or not safepath.plain_name(name):
            raise StoragePreparationError(
                f"spec.volumes[{index}].name: {str(name)[:80]!r} is not a volume name"
            )
    return out


def sources(vmi: Mapping[str, Any], key: str) -> list[tuple[int, str, Mapping[str, Any], str]]:
    """Each volume with a ``key`` source: its index, name, that source and the source's field path."""
    out = []
    for index, volume in volumes(vmi):
        source = volume.get(key)
        if source is not None:
            field = f"spec.volumes[{index}].{key}"
            out.append((index, str(volume["name"]), mapping(source, field), field))
    return out


def quantity(value: Any, field: str) -> int:
    """A Kubernetes quantity in bytes (0 when absent)."""
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        # Imported here: the typed API is heavy, and most VMIs size no disk.
        from kubevirt_api.resource import Quantity

        try:
            size = Quantity(str(value)).value()
        except ValueError as err:
            raise StoragePreparationError(f"{field}: not a quantity: {str(value)[:80]!r}") from err
    if size < 0:
        raise StoragePreparationError(f"{field}: must not be negative")
    return size
