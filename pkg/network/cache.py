"""What phase 1 records for later: KubeVirt's cache files, at KubeVirt's paths.

* The pod interface cache, on the node (virt-handler's private directory):
  ``network-info-cache/<vmi uid>/<interface name>`` holding the interface spec and the pod's IPs;
  virt-handler reports them in ``status.interfaces``.
* The DHCP cache, inside the pod: ``/var/run/kubevirt-private/vif-cache-<pod interface>.json`` (bridge
  binding: the pod's address, routes and MAC, which the pod no longer shows once they moved to the VM).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubevirt import pod_paths
from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.podroot import PodRoot

POD_IFACE_CACHE_DIR = "network-info-cache"


@dataclass(frozen=True)
class PodIfaceCache:
    iface: dict[str, Any]
    pod_ip: str
    pod_ips: tuple[str, ...]


class PodInterfaceCache:
    """``<private dir>/network-info-cache/<uid>/<iface>`` on the node."""

    def __init__(self, private_dir: Path) -> None:
        self._root = private_dir / POD_IFACE_CACHE_DIR

    def write(self, uid: str, name: str, entry: PodIfaceCache) -> None:
        directory = self._root / uid
        directory.mkdir(parents=True, exist_ok=True, mode=0o750)
        document = {"iface": entry.iface, "podIP": entry.pod_ip, "podIPs": list(entry.pod_ips)}
        temporary = directory / f".{name}.tmp"
        temporary.write_text(json.dumps(document, indent=2))
        temporary.replace(directory / name)

    def read(self, uid: str, name: str) -> PodIfaceCache | None:
        try:
            document = json.loads((self._root / uid / name).read_text())
        except (FileNotFoundError, NotADirectoryError, ValueError):
            return None
        return PodIfaceCache(
            iface=document.get("iface") or {},
            pod_ip=document.get("podIP") or "",
            pod_ips=tuple(document.get("podIPs") or ()),
        )

    def delete(self, uid: str) -> None:
        shutil.rmtree(self._root / uid, ignore_errors=True)

    def uids(self) -> list[str]:
        return sorted(p.name for p in self._root.iterdir()) if self._root.is_dir() else []


def dhcp_cache_path(pod_iface: str) -> str:
    return f"{pod_paths.VIRT_PRIVATE_DIR}/vif-cache-{pod_iface}.json"  # PodRoot takes it as relative


def write_dhcp_cache(root: PodRoot, pod_iface: str, config: DHCPConfig) -> None:
    # Readable by the launcher's group too: the private volume's fsGroup directory hands new files the
    # non-root launcher's group (107), and KubeVirt's 0604 would then deny exactly that reader.
    root.write(dhcp_cache_path(pod_iface), config.to_json(), mode=0o644)


def read_dhcp_cache(root: PodRoot, pod_iface: str) -> DHCPConfig:
    return DHCPConfig.from_json(root.read(dhcp_cache_path(pod_iface)))
