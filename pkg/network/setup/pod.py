"""Phase 1 for one VMI: from its spec and its launcher's PID to a configured pod network.

Run by virt-handler before every sync; it does the work once per VMI (the node's pod interface cache
records it) and is a no-op for VMIs without a pod network binding.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute

from kubevirt.log import get_logger
from kubevirt.network import cache
from kubevirt.network.netns import netns_path, run_in_netns
from kubevirt.network.plan import PodBinding, pod_binding
from kubevirt.network.podnet import PodLink, discover, link_index
from kubevirt.network.setup.bridge import setup_bridge
from kubevirt.network.setup.links import step
from kubevirt.network.setup.masquerade import setup_masquerade
from kubevirt.podroot import PodRoot

MIGRATION_TRANSPORT_UNIX = "Unix"


@dataclass(frozen=True)
class Phase1Result:
    binding: PodBinding
    pod: PodLink
    seconds: float


class PodNetworkSetup:
    def __init__(self, *, private_dir: Path) -> None:
        self.cache = cache.PodInterfaceCache(private_dir)
        self._log = get_logger()

    def is_done(self, uid: str, binding: PodBinding) -> bool:
        return self.cache.read(uid, binding.name) is not None

    def pending(self, vmi: Mapping[str, Any]) -> bool:
        """Whether ``vmi`` has a pod network binding not set up yet (raises for an impossible one)."""
        binding = pod_binding(vmi.get("spec") or {})
        return binding is not None and not self.is_done(str(vmi["metadata"]["uid"]), binding)

    def setup(
        self, vmi: Mapping[str, Any], pid: int, *, netns: Path | None = None, root: PodRoot | None = None
    ) -> Phase1Result | None:
        """Sets up the pod network of ``vmi``, whose launcher runs as ``pid`` (None: nothing to do).

        Raises :class:`~kubevirt.network.errors.NetworkConfigError` for a VMI that asks for the
        impossible, :class:`~kubevirt.network.errors.NetworkError` otherwise; either way nothing is left
        half-configured."""
        binding = pod_binding(vmi.get("spec") or {})
        uid = str(vmi["metadata"]["uid"])
        if binding is None or self.is_done(uid, binding):
            return None
        status = vmi.get("status") or {}
        owner = int(status.get("runtimeUser") or 0)
        legacy_ports = status.get("migrationTransport") != MIGRATION_TRANSPORT_UNIX
        started = time.monotonic()

        def work() -> PodLink:
            with step(f"setting up the {binding.binding} binding of {binding.pod_iface}"):
                return already_configured() or configure()

        def already_configured() -> PodLink | None:
            # Phase 1 is all or nothing, so a bridge means it ran to the end for this pod before, and
            # only the node's record of it is gone (a handler that lost its cache): running it again
            # would find the pod link moved away. The pod's addresses stayed on the pod interface
            # (masquerade) or on the placeholder that took its name (bridge).
            with IPRoute() as ipr:
                if link_index(ipr, binding.bridge) is None:
                    return None
                pod = discover(ipr, binding.pod_iface)
            self._log.info("pod network found set up already", uid=uid, binding=binding.binding)
            return pod

        def configure() -> PodLink:
            if binding.binding == "masquerade":
                return setup_masquerade(binding, owner=owner, legacy_migration_ports=legacy_ports)
            pod_root = root or PodRoot.of_process(pid)
            return setup_bridge(
                binding,
                owner=owner,
                persist=lambda dhcp: cache.write_dhcp_cache(pod_root, binding.pod_iface, dhcp),
            )

        pod = run_in_netns(netns or netns_path(pid), work)
        ips = [str(a.ip) for a in pod.addresses]
        iface = (
            ((vmi.get("spec") or {}).get("domain") or {})
            .get("devices", {})
            .get("interfaces", [])[binding.index]
        )
        self.cache.write(
            uid,
            binding.name,
            cache.PodIfaceCache(iface=iface, pod_ip=ips[0] if ips else "", pod_ips=tuple(ips)),
        )
        seconds = time.monotonic() - started
        self._log.info("pod network set up", uid=uid, binding=binding.binding, seconds=round(seconds, 4))
        return Phase1Result(binding=binding, pod=pod, seconds=seconds)

    def forget(self, uid: str) -> None:
        """Drops what the node keeps for a VMI; the pod's own links and rules go with its namespace."""
        self.cache.delete(uid)
