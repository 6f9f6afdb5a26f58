"""The host network changes the cluster needs, and undoing them: the pod bridge, IP forwarding (the
bridge plugin turns it on), iptables chains and rules (ours and the kubelet's)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from .layout import BRIDGE, NODE_IP, POD_SUBNET, Node

# Kernel settings the cluster may change: the bridge plugin turns on forwarding; kube-proxy is configured
# to leave the others alone, and cluster-down puts back whatever changed anyway.
SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/ipv4/conf/all/route_localnet",
    "net/netfilter/nf_conntrack_max",
    "net/netfilter/nf_conntrack_tcp_timeout_established",
    "net/netfilter/nf_conntrack_tcp_timeout_close_wait",
)


def _sysctl(name: str) -> str | None:
    path = Path("/proc/sys") / name
    return path.read_text().strip() if path.exists() else None


FAMILIES = ("iptables", "ip6tables")
# Chains of the kubelet and kube-proxy (KUBE-) and of the CNI plugins (CNI-).
CHAIN_PREFIXES = ("KUBE-", "CNI-")
# Directories the kubelet, containerd and the CNI library create at fixed places outside the state
# directory (container log links, shim sockets, the device plugin socket, CNI result cache), deepest
# first; cluster-down removes the ones that were not there before.
HOST_PATHS = (
    "/var/log/containers",
    "/run/containerd/s",
    "/run/containerd",
    "/var/lib/kubelet",
    "/var/lib/cni",
    "/run/kubevirt",
    # Mount points of further nodes' private copies, and virt-handler's node labeller directory.
    "/var/lib/kubevirt",
    "/var/lib/kubevirt-node-labeller",
)
TABLES = ("filter", "nat", "mangle", "raw")


def _run(*argv: str, check: bool = True) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip()}")
    return result.stdout


def iptables_rules(family: str, table: str) -> list[str]:
    """``iptables-save`` lines of one table: chain declarations (``:NAME``) and rules (``-A ...``)."""
    output = _run(f"{family}-save", "-t", table, check=False)
    lines = []
    for line in output.splitlines():
        if line.startswith(":"):
            lines.append(" ".join(line.split()[:2]))  # without the packet counters
        elif line.startswith("-A "):
            lines.append(line)
    return lines


def _changed_sysctls(before: dict[str, object]) -> dict[str, str]:
    """The settings that differ from ``before``, with the values to put back."""
    old = before.get("sysctls", {})
    assert isinstance(old, dict)
    return {name: value for name, value in old.items() if value is not None and _sysctl(name) != value}


def _chains(lines: list[str]) -> set[str]:
    return {line[1:].split()[0] for line in lines if line.startswith(":")}


def snapshot() -> dict[str, object]:
    return {
        "sysctls": {name: _sysctl(name) for name in SYSCTLS},
        "iptables": {f: {t: iptables_rules(f, t) for t in TABLES} for f in FAMILIES},
        "host_paths": {path: Path(path).exists() for path in HOST_PATHS},
    }


def bridge_exists() -> bool:
    return Path(f"/sys/class/net/{BRIDGE}").exists()


def prepare() -> None:
    """The bridge with the node address: the control plane and the pods meet there."""
    if not bridge_exists():
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
    prefix = POD_SUBNET.split("/")[1]
    if f"{NODE_IP}/{prefix}" not in _run("ip", "-4", "-o", "addr", "show", "dev", BRIDGE):
        _run("ip", "addr", "add", f"{NODE_IP}/{prefix}", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")


def link_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def connect_node(node: Node, pid: int) -> None:
    """A point-to-point veth from the host into the network namespace of ``pid`` (a further node's init):
    the node's address and its pod subnet are routed through it, and the host answers ARP for the node's
    address on the bridge, so the first node's pods reach it like an address of their subnet."""
    inside = ["nsenter", f"--target={pid}", "--net", "--"]
    _run("ip", "link", "add", node.host_veth, "type", "veth", "peer", "name", "eth0", "netns", str(pid))
    _run("ip", "link", "set", node.host_veth, "up")
    _run(*inside, "ip", "link", "set", "lo", "up")
    _run(*inside, "ip", "addr", "add", f"{node.ip}/32", "dev", "eth0")
    _run(*inside, "ip", "link", "set", "eth0", "up")
    _run(*inside, "ip", "route", "add", NODE_IP, "dev", "eth0", "scope", "link")
    _run(*inside, "ip", "route", "add", "default", "via", NODE_IP, "dev", "eth0")
    _run(*inside, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    # The host side has no address of its own: the node address as source keeps replies on the pod network.
    _run("ip", "route", "add", f"{node.ip}/32", "dev", node.host_veth, "src", NODE_IP)
    _run("ip", "route", "add", node.pod_subnet, "via", node.ip, "dev", node.host_veth, "src", NODE_IP)
    Path(f"/proc/sys/net/ipv4/conf/{BRIDGE}/proxy_arp").write_text("1\n")
    Path(f"/proc/sys/net/ipv4/neigh/{BRIDGE}/proxy_delay").write_text("0\n")
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")


def restore(before: dict[str, object]) -> list[str]:
    """Undoes what changed since ``snapshot``; returns what it undid, for the log."""
    undone = []
    if bridge_exists():
        _run("ip", "link", "delete", BRIDGE)
        undone.append(f"bridge {BRIDGE}")
    iptables_before = before.get("iptables", {})
    assert isinstance(iptables_before, dict)
    for family in FAMILIES:
        for table in TABLES:
            old = iptables_before.get(family, {}).get(table, [])
            undone += _restore_table(family, table, old)
    for name, value in _changed_sysctls(before).items():
        (Path("/proc/sys") / name).write_text(value)
        undone.append(f"{name.replace('/', '.')}={value}")
    return undone


def _our_chain(chain: str) -> bool:
    return chain.startswith(CHAIN_PREFIXES)


def _our_rule(rule: str) -> bool:
    """A rule the kubelet, the CNI plugins or cluster-up adds: it jumps to one of their chains or names
    the pod network. Rules of anything else on the host are never touched."""
    words = shlex.split(rule)
    targets = [words[i + 1] for i, word in enumerate(words[:-1]) if word in ("-j", "-g", "--jump", "--goto")]
    return any(_our_chain(target) for target in targets) or BRIDGE in words or POD_SUBNET in words


def _stale(old: list[str], now: list[str]) -> tuple[list[str], list[str]]:
    """The cluster's rules (in chains that existed before) and chains that are new since ``old``."""
    old_chains = _chains(old)
    old_rules = set(old)
    rules = [
        rule
        for rule in now
        if rule.startswith("-A ")
        and rule.split()[1] in old_chains
        and rule not in old_rules
        and _our_rule(rule)
    ]
    chains = sorted(chain for chain in _chains(now) - old_chains if _our_chain(chain))
    return rules, chains


def _restore_table(family: str, table: str, old: list[str]) -> list[str]:
    rules, new_chains = _stale(old, iptables_rules(family, table))
    undone = []
    for rule in rules:
        _run(family, "-t", table, "-D", *shlex.split(rule)[1:])
        undone.append(f"{family} -t {table} {rule}")
    for chain in sorted(new_chains):
        _run(family, "-t", table, "-F", chain)
    for chain in sorted(new_chains):
        _run(family, "-t", table, "-X", chain)
        undone.append(f"{family} -t {table} chain {chain}")
    return undone


def differences(before: dict[str, object]) -> list[str]:
    """What is still different from ``snapshot`` (empty when the host is back as it was)."""
    left = []
    if bridge_exists():
        left.append(f"bridge {BRIDGE} exists")
    left += [f"{name.replace('/', '.')} changed" for name in _changed_sysctls(before)]
    iptables_before = before.get("iptables", {})
    assert isinstance(iptables_before, dict)
    for family in FAMILIES:
        for table in TABLES:
            old = iptables_before.get(family, {}).get(table, [])
            rules, chains = _stale(old, iptables_rules(family, table))
            left += [f"{family} -t {table}: {line}" for line in rules + [f"chain {c}" for c in chains]]
    return left


def load(path: Path) -> dict[str, object]:
    loaded = json.loads(path.read_text())
    assert isinstance(loaded, dict)
    return loaded
