"""What the guest agent reports, as the launcher keeps it, and its two JSON renderings.

KubeVirt's launcher keeps the agent's data in its internal ``api`` structs, which carry no json tags:
in the domain's ``Status`` they appear under Go field names (``*_domain_json``). What GetGuestInfo,
GetUsers and GetFilesystems return to virt-handler are the v1 API types
(``VirtualMachineInstanceGuestAgentInfo``, ``...GuestOSUser``, ``...FileSystem``) with their json tags
and ``omitempty`` rules (``*_vmi_json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FS_FROZEN = "frozen"
FS_THAWED = "thawed"


def go_float(value: float) -> float | int:
    """A float64 as Go's encoding/json writes it: a whole number without a fraction."""
    return int(value) if value.is_integer() else value


@dataclass(frozen=True)
class GuestOSInfo:
    name: str = ""
    kernel_release: str = ""
    version: str = ""
    pretty_name: str = ""
    version_id: str = ""
    kernel_version: str = ""
    machine: str = ""
    id: str = ""

    def domain_json(self) -> dict[str, str]:
        """``api.GuestOSInfo``."""
        return {
            "Name": self.name,
            "KernelRelease": self.kernel_release,
            "Version": self.version,
            "PrettyName": self.pretty_name,
            "VersionId": self.version_id,
            "KernelVersion": self.kernel_version,
            "Machine": self.machine,
            "Id": self.id,
        }

    def vmi_json(self) -> dict[str, str]:
        """``v1.VirtualMachineInstanceGuestOSInfo`` (every field omitted when empty)."""
        fields = {
            "name": self.name,
            "kernelRelease": self.kernel_release,
            "version": self.version,
            "prettyName": self.pretty_name,
            "versionId": self.version_id,
            "kernelVersion": self.kernel_version,
            "machine": self.machine,
            "id": self.id,
        }
        return {key: value for key, value in fields.items() if value}


@dataclass(frozen=True)
class InterfaceStatus:
    mac: str = ""
    ip: str = ""
    ips: tuple[str, ...] | None = None  # None: Go's nil slice (no address reported)
    interface_name: str = ""

    def domain_json(self) -> dict[str, Any]:
        """``api.InterfaceStatus``."""
        return {
            "Mac": self.mac,
            "Ip": self.ip,
            "IPs": None if self.ips is None else list(self.ips),
            "InterfaceName": self.interface_name,
        }


@dataclass(frozen=True)
class Timezone:
    zone: str = ""
    offset: int = 0  # seconds east of UTC


@dataclass(frozen=True)
class User:
    name: str = ""
    domain: str = ""
    login_time: float = 0.0  # seconds since the epoch

    def vmi_json(self) -> dict[str, Any]:
        """``v1.VirtualMachineInstanceGuestOSUser``."""
        entry: dict[str, Any] = {"userName": self.name}
        if self.domain:
            entry["domain"] = self.domain
        if self.login_time:
            entry["loginTime"] = go_float(self.login_time)
        return entry


@dataclass(frozen=True)
class FSDisk:
    serial: str = ""
    bus_type: str = ""


@dataclass(frozen=True)
class Filesystem:
    name: str = ""
    mountpoint: str = ""
    type: str = ""
    used_bytes: int = 0
    total_bytes: int = 0
    disks: tuple[FSDisk, ...] = ()

    def vmi_json(self) -> dict[str, Any]:
        """``v1.VirtualMachineInstanceFileSystem``."""
        entry: dict[str, Any] = {
            "diskName": self.name,
            "mountPoint": self.mountpoint,
            "fileSystemType": self.type,
            "usedBytes": self.used_bytes,
            "totalBytes": self.total_bytes,
        }
        if self.disks:
            entry["disk"] = [
                {**({"serial": disk.serial} if disk.serial else {}), "busType": disk.bus_type}
                for disk in self.disks
            ]
        return entry


@dataclass(frozen=True)
class CommandInfo:
    name: str = ""
    enabled: bool = False

    def vmi_json(self) -> dict[str, Any]:
        """``v1.GuestAgentCommandInfo``."""
        return {"name": self.name, "enabled": True} if self.enabled else {"name": self.name}


@dataclass(frozen=True)
class AgentInfo:
    """``guest-info``: the agent's version and the commands it offers."""

    version: str = ""
    supported_commands: tuple[CommandInfo, ...] = ()


@dataclass(frozen=True)
class GuestLoad:
    """The guest's load averages (libvirt's guest-info ``load`` type, where libvirt has it)."""

    load1m: float | None = None
    load5m: float | None = None
    load15m: float | None = None
