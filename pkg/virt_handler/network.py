"""virt-handler's side of VM networking: phase 1 for each VMI before its sync, and its interface status.

The launcher's PID comes from the kernel (the peer credentials of its command socket, dialled without
following links and checked to be a process of the launcher's pod), not from anything the pod says; phase 1
then runs inside that process's network namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kubevirt import pod_paths
from kubevirt.log import get_logger
from kubevirt.network.errors import NetworkConfigError, NetworkError
from kubevirt.network.names import POD_INTERFACE
from kubevirt.network.setup.pod import PodNetworkSetup
from kubevirt.virt_handler.pod_sockets import PodSocketError, launcher_pid
from kubevirt_api.view import JSON

DEFAULT_PRIVATE_DIR = Path(pod_paths.VIRT_PRIVATE_DIR)
SETUP_FAILED_REASON = "NetworkSetupError"
CONFIG_INVALID_REASON = "NetworkConfigurationInvalid"


class NetworkSetupError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class HandlerNetwork:
    def __init__(self, *, private_dir: Path = DEFAULT_PRIVATE_DIR) -> None:
        self._setup = PodNetworkSetup(private_dir=private_dir)
        self._log = get_logger()

    def setup(self, vmi: Mapping[str, Any], launcher_socket: Path) -> None:
        """Phase 1 for ``vmi``; :class:`NetworkSetupError` with a reason and message for its status."""
        try:
            if self._setup.pending(vmi):
                self._setup.setup(vmi, launcher_pid(launcher_socket))
        except NetworkConfigError as err:
            raise NetworkSetupError(CONFIG_INVALID_REASON, str(err)) from err
        except (NetworkError, OSError, PodSocketError) as err:
            self._log.error("pod network setup failed", name=vmi["metadata"]["name"], reason=str(err))
            raise NetworkSetupError(
                SETUP_FAILED_REASON, f"failed to configure the pod network: {err}"
            ) from err

    def interface_status(self, vmi: Mapping[str, Any], interfaces: list[JSON]) -> list[JSON]:
        """``status.interfaces`` with the pod's IPs on the interface bound to the pod network."""
        uid = str(vmi["metadata"].get("uid") or "")
        for entry in interfaces:
            cached = self._setup.cache.read(uid, str(entry.get("name") or ""))
            if cached is None or not cached.pod_ip:
                continue
            entry["ipAddress"] = cached.pod_ip
            entry["ipAddresses"] = list(cached.pod_ips)
            entry["podInterfaceName"] = POD_INTERFACE
        return interfaces

    def forget(self, uid: str) -> None:
        self._setup.forget(uid)

    def forget_all_but(self, uids: Iterable[str]) -> None:
        """Drops the node's records of VMIs no longer on this node."""
        keep = set(uids)
        for uid in self._setup.cache.uids():
            if uid not in keep:
                self._setup.forget(uid)
