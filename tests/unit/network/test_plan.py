"""Which interface is bound to the pod network, and the refusals that name the field at fault."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from kubevirt.network.errors import NetworkConfigError
from kubevirt.network.plan import ForwardedPort, pod_binding


def spec(iface: dict[str, Any], network: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "domain": {"devices": {"interfaces": [iface]}},
        "networks": [network or {"name": iface["name"], "pod": {}}],
    }


def test_masquerade_with_ports() -> None:
    binding = pod_binding(
        spec({"name": "default", "masquerade": {}, "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]})
    )
    assert binding is not None
    assert (binding.binding, binding.tap, binding.bridge, binding.pod_iface) == (
        "masquerade",
        "tap0",
        "k6t-eth0",
        "eth0",
    )
    assert binding.ports == (ForwardedPort(80, "tcp"), ForwardedPort(53, "udp"))
    assert (binding.vm_cidr, binding.vm_ipv6_cidr) == ("10.0.2.0/24", "fd10:0:2::/120")


def test_port_range_ends_are_forwarded() -> None:
    binding = pod_binding(
        spec({"name": "default", "masquerade": {}, "ports": [{"port": 1}, {"port": 65535}]})
    )
    assert binding is not None
    assert binding.ports == (ForwardedPort(1, "tcp"), ForwardedPort(65535, "tcp"))


def test_bridge_and_custom_cidr() -> None:
    binding = pod_binding(
        spec({"name": "net", "bridge": {}, "macAddress": "02:00:00:aa:bb:cc"}, {"name": "net", "pod": {}})
    )
    assert binding is not None
    assert binding.binding == "bridge"
    assert binding.mac == "02:00:00:aa:bb:cc"
    masq = pod_binding(
        spec({"name": "n", "masquerade": {}}, {"name": "n", "pod": {"vmNetworkCIDR": "10.11.0.0/16"}})
    )
    assert masq is not None
    assert masq.vm_cidr == "10.11.0.0/16"


def test_nothing_to_do_without_a_pod_binding() -> None:
    assert pod_binding({}) is None
    assert pod_binding(spec({"name": "default", "sriov": {}})) is None
    assert pod_binding(spec({"name": "default", "masquerade": {}, "state": "absent"})) is None


@pytest.mark.parametrize(
    ("the_spec", "field", "message"),
    [
        (
            spec(
                {
                    "name": "default",
                    "masquerade": {},
                    "ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}],
                }
            ),
            "spec.domain.devices.interfaces[0].ports[1].port",
            "conflicts with spec.domain.devices.interfaces[0].ports[0]",
        ),
        (
            spec(
                {
                    "name": "default",
                    "masquerade": {},
                    "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}],
                }
            ),
            "spec.domain.devices.interfaces[0].ports[1].name",
            "Duplicate name of the port: a",
        ),
        (
            spec({"name": "default", "masquerade": {}, "ports": [{"port": 80, "protocol": "SCTP"}]}),
            "spec.domain.devices.interfaces[0].ports[0].protocol",
            "Unknown protocol, only TCP or UDP allowed",
        ),
        (
            spec({"name": "default", "masquerade": {}, "ports": [{"port": 0}]}),
            "spec.domain.devices.interfaces[0].ports[0].port",
            "out of range",
        ),
        (  # admitted by KubeVirt's webhook (its bound is `> 65536`), but no nft port
            spec({"name": "default", "masquerade": {}, "ports": [{"port": 80}, {"port": 65536}]}),
            "spec.domain.devices.interfaces[0].ports[1].port",
            "port 65536 is out of range (1-65535)",
        ),
        (
            spec({"name": "default", "masquerade": {}, "ports": [{"port": -1}]}),
            "spec.domain.devices.interfaces[0].ports[0].port",
            "out of range",
        ),
        (
            spec({"name": "sec", "masquerade": {}}, {"name": "sec", "multus": {"networkName": "nad"}}),
            "spec.networks[0].multus",
            "needs Multus",
        ),
        (
            spec({"name": "other", "masquerade": {}}),
            "spec.domain.devices.interfaces[0].name",
            "",
        ),
        (
            spec({"name": "default", "bridge": {}, "ports": [{"port": 80}]}),
            "spec.domain.devices.interfaces[0].ports",
            "only forwarded by the masquerade binding",
        ),
        (
            spec({"name": "n", "masquerade": {}}, {"name": "n", "pod": {"vmNetworkCIDR": "10.0.0.0/31"}}),
            "spec.networks[0].pod.vmNetworkCIDR",
            "too small",
        ),
        (
            spec({"name": "default", "bridge": {}, "macAddress": "02:00:00:00:00:01,set:x"}),
            "spec.domain.devices.interfaces[0].macAddress",
            "malformed MAC address",
        ),
        (
            spec({"name": "default", "masquerade": {}, "ports": [{"port": "eighty"}]}),
            "spec.domain.devices.interfaces[0].ports[0].port",
            "must be an integer",
        ),
    ],
)
def test_refusals_name_the_field(the_spec: dict[str, Any], field: str, message: str) -> None:
    if field.endswith(".name") and not message:
        the_spec["networks"] = [{"name": "default", "pod": {}}]
        message = "'other' not found."
    with pytest.raises(NetworkConfigError) as caught:
        pod_binding(the_spec)
    assert caught.value.field == field
    assert message in caught.value.message


def test_two_interfaces_on_the_pod_network() -> None:
    the_spec = {
        "domain": {"devices": {"interfaces": [{"name": "a", "masquerade": {}}, {"name": "b", "bridge": {}}]}},
        "networks": [{"name": "a", "pod": {}}, {"name": "b", "pod": {}}],
    }
    with pytest.raises(NetworkConfigError, match="more than one interface is connected to a pod network"):
        pod_binding(the_spec)


def test_a_custom_vm_cidr_is_read_as_the_typed_api_reads_it() -> None:
    the_spec = spec({"name": "n", "masquerade": {}}, {"name": "n", "pod": {"vmNetworkCIDR": "10.1.2.3/24"}})
    binding = pod_binding(the_spec)
    assert binding is not None
    assert binding.vm_cidr == "10.1.2.3/24"
    assert binding.vm_ipv6_cidr == "fd10:0:2::/120"


def test_planning_in_the_launcher_does_not_load_the_typed_api() -> None:
    # virt-launcher plans its phase 2 with this module under its VMI's CPU limit: the light view only.
    code = (
        "import sys; import kubevirt.network.launcher; "
        "sys.exit(sorted(m for m in sys.modules if m.startswith(('kubevirt_api', 'pydantic'))"
        " and m not in ('kubevirt_api', 'kubevirt_api.view')) or 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize(
    ("multiqueue", "cpu", "queues"),
    [
        (None, {"sockets": 2, "cores": 2, "threads": 1}, 0),
        (False, {"sockets": 2}, 0),
        (True, {"sockets": 1, "cores": 2, "threads": 1, "maxSockets": 2}, 2),  # the vCPUs it boots with
        (True, {"sockets": 1, "cores": 1, "threads": 1}, 1),
        (True, None, 1),
        (True, {"sockets": 64, "cores": 8, "threads": 1}, 256),  # the kernel's cap
    ],
)
def test_tap_queues_follow_the_vcpus_with_multiqueue(
    multiqueue: bool | None, cpu: dict[str, Any] | None, queues: int
) -> None:
    the_spec = spec({"name": "default", "masquerade": {}})
    if multiqueue is not None:
        the_spec["domain"]["devices"]["networkInterfaceMultiqueue"] = multiqueue
    if cpu is not None:
        the_spec["domain"]["cpu"] = cpu
    binding = pod_binding(the_spec)
    assert binding is not None
    assert binding.queues == queues
