"""The last answers of the guest agent, and the signal that the domain's status changed with them.

As KubeVirt's agent store: the OS info, the interfaces and the filesystem freeze status are what the
domain's ``Status`` carries, so storing one of them for the first time or with a different value calls
``on_change`` (the launcher then sends virt-handler a domain update). The other data (version and
commands, hostname, timezone, users, filesystems, load) is only read on request. Nothing is forgotten
when the agent disconnects: KubeVirt keeps reporting the last values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from kubevirt.virt_launcher.virtwrap.agent.model import (
    AgentInfo,
    Filesystem,
    GuestLoad,
    GuestOSInfo,
    InterfaceStatus,
    Timezone,
    User,
)

OS_INFO = "os"
INTERFACES = "interfaces"
FS_FREEZE_STATUS = "fsfreeze-status"
HOSTNAME = "hostname"
TIMEZONE = "timezone"
USERS = "users"
FILESYSTEMS = "filesystems"
AGENT_INFO = "agent"
LOAD = "load"

# What the domain's Status carries: a change to one of these is a domain update.
STATUS_KEYS = frozenset({OS_INFO, INTERFACES, FS_FREEZE_STATUS})
_UNSET = object()


class AgentStore:
    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, Any] = {}
        self._on_change = on_change or (lambda: None)

    def store(self, key: str, value: Any) -> None:
        self.store_many({key: value})

    def store_many(self, values: Mapping[str, Any]) -> None:
        """Keep ``values``; one ``on_change`` call when any status value is new or different."""
        changed = False
        with self._lock:
            for key, value in values.items():
                old = self._data.get(key, _UNSET)
                self._data[key] = value
                changed = changed or (key in STATUS_KEYS and (old is _UNSET or old != value))
        if changed:
            self._on_change()

    def _get(self, key: str, default: Any) -> Any:
        with self._lock:
            return self._data.get(key, default)

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self._data

    # -- typed reads ---------------------------------------------------------------------------

    def os_info(self) -> GuestOSInfo | None:
        value: GuestOSInfo | None = self._get(OS_INFO, None)
        return value

    def interfaces(self) -> tuple[InterfaceStatus, ...] | None:
        value: tuple[InterfaceStatus, ...] | None = self._get(INTERFACES, None)
        return value

    def fs_freeze_status(self) -> str | None:
        value: str | None = self._get(FS_FREEZE_STATUS, None)
        return value

    def hostname(self) -> str:
        value: str = self._get(HOSTNAME, "")
        return value

    def timezone(self) -> Timezone:
        value: Timezone = self._get(TIMEZONE, Timezone())
        return value

    def agent_info(self) -> AgentInfo:
        value: AgentInfo = self._get(AGENT_INFO, AgentInfo())
        return value

    def users(self, limit: int | None = None) -> tuple[User, ...]:
        """The logged-in users, the first ``limit`` of them when given."""
        value: tuple[User, ...] = self._get(USERS, ())
        return value if limit is None else value[:limit]

    def filesystems(self, limit: int | None = None) -> tuple[Filesystem, ...]:
        value: tuple[Filesystem, ...] = self._get(FILESYSTEMS, ())
        return value if limit is None else value[:limit]

    def load(self) -> GuestLoad:
        value: GuestLoad = self._get(LOAD, GuestLoad())
        return value

    # -- the domain's Status -------------------------------------------------------------------

    def domain_status_fields(self) -> dict[str, Any]:
        """The agent's part of KubeVirt's ``api.DomainStatus`` (Go field names), for what is known:
        ``Interfaces``, ``OSInfo`` and ``FSFreezeStatus``."""
        with self._lock:
            data = dict(self._data)
        fields: dict[str, Any] = {}
        if INTERFACES in data:
            interfaces = data[INTERFACES]
            fields["Interfaces"] = None if interfaces is None else [i.domain_json() for i in interfaces]
        if OS_INFO in data:
            fields["OSInfo"] = data[OS_INFO].domain_json()
        if FS_FREEZE_STATUS in data:
            fields["FSFreezeStatus"] = {"Status": data[FS_FREEZE_STATUS]}
        return fields
