"""The links a binding creates, each registered with its undo step."""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Iterator
from typing import Any

from pyroute2 import IPRoute
from pyroute2.ethtool import Ethtool
from pyroute2.netlink.exceptions import NetlinkError

from kubevirt.network.errors import NetworkError
from kubevirt.network.nft.libnft import NftError
from kubevirt.network.podnet import IPInterface, link_index, read_sysctl, write_sysctl
from kubevirt.network.setup.undo import UndoStack


@contextlib.contextmanager
def step(what: str) -> Iterator[None]:
    """Names the step in the error of a netlink or sysctl failure."""
    try:
        yield
    except NetworkError:
        raise
    except (NetlinkError, OSError, NftError) as err:
        raise NetworkError(f"{what}: {err}") from err


def create_bridge(
    ipr: IPRoute, undo: UndoStack, name: str, *, mac: str | None = None, mtu: int | None = None
) -> int:
    settings: dict[str, Any] = {}
    if mac:
        settings["address"] = mac
    if mtu:
        settings["mtu"] = mtu
    with step(f"creating bridge {name}"):
        ipr.link("add", ifname=name, kind="bridge", **settings)
    index = link_index(ipr, name)
    assert index is not None
    undo.push(f"delete bridge {name}", lambda: ipr.link("del", index=index))
    _tx_checksum_off(name)
    return index


def _tx_checksum_off(name: str) -> None:
    # As KubeVirt does: frames the node sends the VM (DHCP answers) carry complete checksums.
    ethtool = Ethtool()
    try:
        ethtool.set_features(name, {"tx-checksum-ip-generic": False})
    except Exception:
        pass
    finally:
        ethtool.close()


def create_tap(
    ipr: IPRoute, undo: UndoStack, name: str, *, master: int, mtu: int, owner: int, multi_queue: bool
) -> int:
    with step(f"creating tap {name}"):
        # pyroute2 takes the tap's flags as ``ifr`` (a plain ``multi_queue`` keyword is ignored); a
        # multi-queue tap must be made one, libvirt's TUNSETIFF cannot change that (EINVAL).
        ifr = {"multi_queue": multi_queue}
        ipr.link("add", ifname=name, kind="tuntap", mode="tap", uid=owner, gid=owner, ifr=ifr)
    index = link_index(ipr, name)
    assert index is not None
    undo.push(f"delete tap {name}", lambda: ipr.link("del", index=index))
    with step(f"attaching tap {name}"):
        ipr.link("set", index=index, mtu=mtu, master=master)
        ipr.link("set", index=index, state="up")
    return index


def add_address(ipr: IPRoute, undo: UndoStack, index: int, address: IPInterface) -> None:
    with step(f"adding address {address}"):
        ipr.addr("add", index=index, address=str(address.ip), prefixlen=address.network.prefixlen)
    undo.push(
        f"remove {address}",
        lambda: ipr.addr("del", index=index, address=str(address.ip), prefixlen=address.network.prefixlen),
    )


def set_up(ipr: IPRoute, undo: UndoStack, index: int) -> None:
    ipr.link("set", index=index, state="up")
    undo.push("set down", lambda: ipr.link("set", index=index, state="down"))


def set_sysctl(undo: UndoStack, key: str, value: str) -> None:
    with step(f"setting {key}"):
        before = read_sysctl(key)
        if before == value:
            return
        write_sysctl(key, value)
    undo.push(f"restore {key}", lambda: write_sysctl(key, before))


def is_ipv4(address: IPInterface) -> bool:
    return isinstance(address, ipaddress.IPv4Interface)
