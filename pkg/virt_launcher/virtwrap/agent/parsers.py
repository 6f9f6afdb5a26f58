"""Reading the guest agent's replies and libvirt's guest-info parameters into :mod:`.model`.

The agent runs in the guest: whatever it sends is untrusted. A reply is read within
:mod:`kubevirt.input_limits`' bounds, must be a JSON object with a ``return`` member of the expected
shape, and each field must have its type (missing and ``null`` fields are their zero value, unknown ones
are ignored, as Go's encoding/json reads them). Anything else raises :class:`AgentReplyError` naming the
command and the field.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt.input_limits import MAX_OBJECT_BYTES, load_json
from kubevirt.virt_launcher.virtwrap.agent.errors import AgentReplyError
from kubevirt.virt_launcher.virtwrap.agent.model import (
    AgentInfo,
    CommandInfo,
    Filesystem,
    FSDisk,
    GuestLoad,
    GuestOSInfo,
    InterfaceStatus,
    Timezone,
    User,
)

# The longest reply read: the API server's object limit, far above any sane agent answer (a guest-exec
# output of ~2 MiB still fits, base64-encoded).
MAX_REPLY_CHARS = MAX_OBJECT_BYTES
_INT64 = (-(2**63), 2**63 - 1)
_EXCERPT = 120


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def agent_return(reply: Any, command: str) -> Any:
    """The ``return`` member of the agent's reply to ``command``."""
    if not isinstance(reply, str):
        raise AgentReplyError(f"the guest agent's reply to {command} is not text")
    if len(reply) > MAX_REPLY_CHARS:
        raise AgentReplyError(
            f"the guest agent's reply to {command} is longer than {MAX_REPLY_CHARS} characters"
        )
    try:
        value = load_json(reply, f"the guest agent's reply to {command}")
    except ValueError as err:
        raise AgentReplyError(f"malformed reply to {command} from the guest agent: {err}") from None
    if not isinstance(value, dict) or "return" not in value:
        raise AgentReplyError(f'the guest agent\'s reply to {command} has no "return": {_excerpt(reply)!r}')
    return value["return"]


class _Fields:
    """Typed access to one JSON object of a reply; failures name the command and the field."""

    def __init__(self, value: Any, where: str) -> None:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise AgentReplyError(f"{where}: expected an object, got {type(value).__name__}")
        self._value = value
        self._where = where

    def _get(self, key: str, kind: type | tuple[type, ...], name: str) -> Any:
        value = self._value.get(key)
        if value is None:
            return None
        if isinstance(value, bool) and kind is not bool:
            raise AgentReplyError(f"{self._where}.{key}: expected {name}, got a boolean")
        if not isinstance(value, kind):
            raise AgentReplyError(f"{self._where}.{key}: expected {name}, got {type(value).__name__}")
        return value

    def string(self, key: str) -> str:
        return self._get(key, str, "a string") or ""

    def integer(self, key: str) -> int:
        value = self._get(key, int, "an integer") or 0
        if not _INT64[0] <= value <= _INT64[1]:
            raise AgentReplyError(f"{self._where}.{key}: {value} is out of range")
        return int(value)

    def boolean(self, key: str) -> bool:
        return bool(self._get(key, bool, "a boolean"))

    def objects(self, key: str) -> list[_Fields]:
        items = self._get(key, list, "a list") or []
        return [_Fields(item, f"{self._where}.{key}[{i}]") for i, item in enumerate(items)]


def _objects(value: Any, where: str) -> list[_Fields]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AgentReplyError(f"{where}: expected a list, got {type(value).__name__}")
    return [_Fields(item, f"{where}[{i}]") for i, item in enumerate(value)]


# -- agent commands ------------------------------------------------------------------------------


def parse_agent_info(reply: Any) -> AgentInfo:
    """``guest-info``."""
    result = agent_return(reply, "guest-info")
    if not isinstance(result, dict):
        raise AgentReplyError(f"guest-info: expected an object, got {type(result).__name__}")
    fields = _Fields(result, "guest-info")
    commands = tuple(
        CommandInfo(name=command.string("name"), enabled=command.boolean("enabled"))
        for command in fields.objects("supported_commands")
    )
    return AgentInfo(version=fields.string("version"), supported_commands=commands)


def parse_filesystems(reply: Any) -> tuple[Filesystem, ...]:
    """``guest-get-fsinfo``."""
    result = agent_return(reply, "guest-get-fsinfo")
    if not isinstance(result, list):
        raise AgentReplyError(f"guest-get-fsinfo: expected a list, got {type(result).__name__}")
    return tuple(
        Filesystem(
            name=fs.string("name"),
            mountpoint=fs.string("mountpoint"),
            type=fs.string("type"),
            used_bytes=fs.integer("used-bytes"),
            total_bytes=fs.integer("total-bytes"),
            disks=tuple(
                FSDisk(serial=disk.string("serial"), bus_type=disk.string("bus-type"))
                for disk in fs.objects("disk")
            ),
        )
        for fs in _objects(result, "guest-get-fsinfo")
    )


def parse_fsfreeze_status(reply: Any) -> str:
    """``guest-fsfreeze-status``: ``frozen`` or ``thawed``."""
    result = agent_return(reply, "guest-fsfreeze-status")
    if not isinstance(result, str) or not result:
        raise AgentReplyError(f"guest-fsfreeze-status: expected the status as a string, got {result!r:.80}")
    return result


def parse_exec_pid(reply: Any) -> int:
    """``guest-exec``: the pid of the started command."""
    result = agent_return(reply, "guest-exec")
    return _Fields(result, "guest-exec").integer("pid")


@dataclass(frozen=True)
class ExecStatus:
    exited: bool
    exit_code: int
    stdout: str


def parse_exec_status(reply: Any) -> ExecStatus:
    """``guest-exec-status``; the captured output is base64 in ``out-data``."""
    fields = _Fields(agent_return(reply, "guest-exec-status"), "guest-exec-status")
    exited = fields.boolean("exited")
    out_data = fields.string("out-data")
    try:
        stdout = base64.b64decode(out_data, validate=True)
    except (binascii.Error, ValueError) as err:
        raise AgentReplyError(f"guest-exec-status.out-data: not base64: {err}") from None
    return ExecStatus(
        exited=exited,
        exit_code=fields.integer("exitcode"),
        stdout=stdout.decode("utf-8", errors="replace"),
    )


# -- libvirt's guest info (virDomainGetGuestInfo's typed parameters) ----------------------------


class GuestInfoParams:
    """libvirt's flat ``key -> value`` answer (``os.name``, ``if.0.addr.1.addr``...)."""

    def __init__(self, params: Any) -> None:
        if not isinstance(params, Mapping):
            raise AgentReplyError(f"guest info: expected libvirt's parameters, got {type(params).__name__}")
        self._params = params

    def string(self, key: str) -> str:
        value = self._params.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise AgentReplyError(f"guest info {key}: expected a string, got {type(value).__name__}")
        return value

    def integer(self, key: str) -> int:
        value = self._params.get(key)
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int):
            raise AgentReplyError(f"guest info {key}: expected an integer, got {type(value).__name__}")
        return value

    def number(self, key: str) -> float | None:
        value = self._params.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise AgentReplyError(f"guest info {key}: expected a number, got {type(value).__name__}")
        return float(value)

    def count(self, key: str) -> int:
        # Entries cannot outnumber the parameters that describe them: a bogus count is cut to that.
        return max(0, min(self.integer(key), len(self._params)))


def interfaces_from(params: GuestInfoParams) -> tuple[InterfaceStatus, ...] | None:
    """The guest's interfaces but ``lo``; each one's first IPv4 address is its IP (else its first
    address). None when there is none (KubeVirt keeps a nil list then)."""
    found: list[InterfaceStatus] = []
    for i in range(params.count("if.count")):
        name = params.string(f"if.{i}.name")
        if name == "lo":
            continue
        addresses: list[str] = []
        primary = ""
        for j in range(params.count(f"if.{i}.addr.count")):
            address = params.string(f"if.{i}.addr.{j}.addr")
            if params.string(f"if.{i}.addr.{j}.type") == "ipv4" and not primary:
                primary = address
            addresses.append(address)
        if not primary and addresses:
            primary = addresses[0]
        found.append(
            InterfaceStatus(
                mac=params.string(f"if.{i}.hwaddr"),
                ip=primary,
                ips=tuple(addresses) if addresses else None,
                interface_name=name,
            )
        )
    return tuple(found) or None


def os_info_from(params: GuestInfoParams) -> GuestOSInfo:
    return GuestOSInfo(
        name=params.string("os.name"),
        kernel_release=params.string("os.kernel-release"),
        version=params.string("os.version"),
        pretty_name=params.string("os.pretty-name"),
        version_id=params.string("os.version-id"),
        kernel_version=params.string("os.kernel-version"),
        machine=params.string("os.machine"),
        id=params.string("os.id"),
    )


def timezone_from(params: GuestInfoParams) -> Timezone:
    return Timezone(zone=params.string("timezone.name"), offset=params.integer("timezone.offset"))


def users_from(params: GuestInfoParams) -> tuple[User, ...]:
    """The logged-in users; libvirt gives each login time in milliseconds."""
    return tuple(
        User(
            name=params.string(f"user.{i}.name"),
            domain=params.string(f"user.{i}.domain"),
            login_time=params.integer(f"user.{i}.login-time") / 1000,
        )
        for i in range(params.count("user.count"))
    )


def load_from(params: GuestInfoParams) -> GuestLoad:
    return GuestLoad(
        load1m=params.number("load.1m"), load5m=params.number("load.5m"), load15m=params.number("load.15m")
    )
