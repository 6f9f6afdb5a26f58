"""The nftables commands of the masquerade binding, in the order and words KubeVirt uses.

Per IP family present in the pod: a ``nat`` table with the four NAT hooks and KubeVirt's two chains;
outbound traffic from the VM is masqueraded; inbound traffic on the pod interface is DNATed to the VM
(every port, or only ``ports`` when the interface lists them) and SNATed to the gateway; traffic from
the pod's loopback reaches the VM the same way. Reserved ports (libvirt's legacy migration ports) stay
with the pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubevirt.network.plan import ForwardedPort

NAT_TABLE = "nat"
PREINBOUND = "KUBEVIRT_PREINBOUND"
POSTINBOUND = "KUBEVIRT_POSTINBOUND"
BASE_CHAINS = (
    ("prerouting", "{ type nat hook prerouting priority -100; }"),
    ("input", "{ type nat hook input priority 100; }"),
    ("output", "{ type nat hook output priority -100; }"),
    ("postrouting", "{ type nat hook postrouting priority 100; }"),
)


@dataclass(frozen=True)
class FamilyAddresses:
    family: str  # "ip" or "ip6"
    gateway: str  # the bridge's address, the VM's default gateway
    vm: str  # the VM's address

    @property
    def loopback(self) -> str:
        return "127.0.0.1" if self.family == "ip" else "::1"


def _set(items: Sequence[str]) -> str:
    return "{ " + ", ".join(items) + " }"


def nat_commands(
    addresses: FamilyAddresses,
    *,
    pod_iface: str,
    bridge: str,
    ports: Sequence[ForwardedPort],
    reserved_ports: Sequence[int] = (),
) -> list[str]:
    """The commands for one family, to run in order."""
    fam, vm, gw, lo = addresses.family, addresses.vm, addresses.gateway, addresses.loopback

    def rule(chain: str, spec: str) -> str:
        return f"add rule {fam} {NAT_TABLE} {chain} {spec}"

    commands = [f"add table {fam} {NAT_TABLE}"]
    commands += [f"add chain {fam} {NAT_TABLE} {chain} {hook}" for chain, hook in BASE_CHAINS]
    commands += [f"add chain {fam} {NAT_TABLE} {PREINBOUND}", f"add chain {fam} {NAT_TABLE} {POSTINBOUND}"]
    commands += [
        rule("postrouting", f"{fam} saddr {vm} counter masquerade"),
        rule("prerouting", f"iifname {pod_iface} counter jump {PREINBOUND}"),
        rule("postrouting", f"oifname {bridge} counter jump {POSTINBOUND}"),
    ]
    if reserved_ports:
        reserved = _set([str(p) for p in reserved_ports])
        commands += [
            rule("output", f"tcp dport {reserved} {fam} saddr {lo} counter return"),
            rule(POSTINBOUND, f"tcp dport {reserved} {fam} saddr {lo} counter return"),
        ]
    to_dnat = _set([lo])
    to_snat = _set([lo])
    for port in ports:
        commands += [
            rule(PREINBOUND, f"{port.protocol} dport {_set([str(port.port)])} counter dnat to {vm}"),
            rule(
                POSTINBOUND, f"{port.protocol} dport {port.port} {fam} saddr {to_snat} counter snat to {gw}"
            ),
            rule("output", f"{fam} daddr {to_dnat} {port.protocol} dport {port.port} counter dnat to {vm}"),
        ]
    if not ports:
        commands += [
            rule(PREINBOUND, f"counter dnat to {vm}"),
            rule(POSTINBOUND, f"{fam} saddr {to_snat} counter snat to {gw}"),
            rule("output", f"{fam} daddr {to_dnat} counter dnat to {vm}"),
        ]
    return commands
