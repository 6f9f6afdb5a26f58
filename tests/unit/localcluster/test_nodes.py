"""A second node's layout and configuration: nothing it uses collides with the first node's, virt-handler's
host paths are private to it, node 1's configuration stays as it was, and its certificates come from
the cluster's CA."""

from __future__ import annotations

import ipaddress
import json
import sys
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import components, nodes, pki  # noqa: E402
from localcluster.layout import NODES_ENV, POD_RANGE_END, Layout, requested_nodes  # noqa: E402

from kubevirt.virt_operator.resource.daemonset import HOST_VOLUMES  # noqa: E402


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(state=tmp_path / "state", cache=tmp_path / "cache")


def test_the_nodes_share_nothing_they_write(layout: Layout) -> None:
    first, second = layout.node(1), layout.node(2)
    for attribute in (
        "name",
        "ip",
        "pod_subnet",
        "pod_gateway",
        "pids",
        "logs",
        "containerd_root",
        "containerd_state",
        "containerd_socket",
        "cni_config_dir",
        "cni_ipam_dir",
        "pod_logs",
        "kubelet_config",
        "kube_proxy_config",
        "kubelet_user",
        "cgroup_root",
    ):
        assert getattr(first, attribute) != getattr(second, attribute), attribute
    assert second.name == f"{layout.node_name}-node2"


def test_node_one_keeps_the_paths_it_always_had(layout: Layout) -> None:
    first = layout.node(1)
    assert (first.ip, first.pod_subnet, first.bridge) == ("10.244.0.1", "10.244.0.0/24", "kvpy0")
    assert first.containerd_socket == layout.containerd_socket
    assert first.containerd_root == layout.containerd_root
    assert first.kubelet_config == layout.run / "kubelet.yaml"
    assert first.pids == layout.pids
    kubelet = yaml.safe_load(components.kubelet_config(first))
    assert "cgroupRoot" not in kubelet
    assert kubelet["healthzBindAddress"] == "127.0.0.1"


def test_node_addresses_lie_above_the_first_nodes_pod_range(layout: Layout) -> None:
    range_end = ipaddress.IPv4Address(POD_RANGE_END)
    bridge_subnet = ipaddress.IPv4Network(layout.node(1).pod_subnet)
    cni = json.loads(components.cni_config(layout.node(1)))
    assert cni["plugins"][0]["ipam"]["ranges"][0][0]["rangeEnd"] == POD_RANGE_END
    for index in (2, 3, 4):
        node = layout.node(index)
        address = ipaddress.IPv4Address(node.ip)
        assert address in bridge_subnet
        assert range_end < address < bridge_subnet.broadcast_address
        assert not ipaddress.ip_network(node.pod_subnet).overlaps(bridge_subnet)


def test_second_node_configuration_points_at_its_own_runtime_and_network(layout: Layout) -> None:
    node = layout.node(2)
    kubelet = yaml.safe_load(components.kubelet_config(node))
    assert kubelet["address"] == node.ip == kubelet["healthzBindAddress"]
    assert kubelet["containerRuntimeEndpoint"] == f"unix://{node.containerd_socket}"
    assert kubelet["cgroupRoot"] == "/kubevirt-py-node2"
    assert kubelet["podCIDR"] == "10.244.1.0/24"
    assert kubelet["tlsCertFile"].endswith("/node2-kubelet-serving.crt")
    proxy = yaml.safe_load(components.kube_proxy_config(node))
    assert proxy["hostnameOverride"] == node.name
    assert proxy["healthzBindAddress"] == f"{node.ip}:10256"
    ipam = json.loads(components.cni_config(node))["plugins"][0]["ipam"]
    assert ipam["ranges"] == [[{"subnet": "10.244.1.0/24", "gateway": "10.244.1.1"}]]
    assert ipam["dataDir"] == str(node.cni_ipam_dir)
    containerd = components.containerd_config(node)
    assert f'address = "{node.containerd_socket}"' in containerd
    assert f'root = "{node.containerd_root}"' in containerd
    kubelet_argv = components.node_agents(node)[0].argv
    assert f"--hostname-override={node.name}" in kubelet_argv
    assert f"--node-ip={node.ip}" in kubelet_argv
    assert "--root-dir=/var/lib/kubelet" in kubelet_argv  # private to the node through its mount namespace


@pytest.mark.parametrize(("name", "host_path"), [(v[0], v[1]) for v in HOST_VOLUMES])
def test_every_virt_handler_host_path_is_private_to_the_second_node(
    layout: Layout, name: str, host_path: str
) -> None:
    node = layout.node(2)
    resolved = (
        Path("/run" + host_path.removeprefix("/var/run"))
        if host_path.startswith("/var/run/")
        else Path(host_path)
    )
    private = nodes.host_path(node, resolved)
    assert private != resolved, f"{name}: {host_path} is shared with the first node"
    assert node.dir in private.parents


def test_bidirectional_directories_are_shared_mounts_in_the_node(layout: Layout) -> None:
    shared = {target for _source, target, is_shared in nodes.mounts(layout.node(2)) if is_shared}
    assert shared == {"/run/kubevirt", "/var/lib/kubelet"}
    targets = [target for _source, target, _shared in nodes.mounts(layout.node(2))]
    assert targets.index("/run") < targets.index("/run/kubevirt")  # the share dir goes over the new /run


def test_requested_nodes_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NODES_ENV, raising=False)
    assert requested_nodes() == 1
    monkeypatch.setenv(NODES_ENV, "2")
    assert requested_nodes() == 2
    for bad in ("0", "5", "two", "-1"):
        monkeypatch.setenv(NODES_ENV, bad)
        with pytest.raises(ValueError, match=NODES_ENV):
            requested_nodes()


def test_layout_refuses_nodes_it_has_no_addresses_for(layout: Layout) -> None:
    with pytest.raises(ValueError, match="nodes 1 to 4"):
        layout.node(5)


def test_added_leaves_are_issued_by_the_existing_authority(layout: Layout) -> None:
    directory = layout.pki
    pki.generate(directory, components.certificates(layout), components.AUTHORITIES)
    leaves = components.node_certificates(layout.node(2))
    pki.add_leaves(directory, leaves)
    ca = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
    serving = x509.load_pem_x509_certificate((directory / "node2-kubelet-serving.crt").read_bytes())
    public_key = ca.public_key()
    assert isinstance(public_key, ec.EllipticCurvePublicKey)
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address(layout.node(2).ip) in names.get_values_for_type(x509.IPAddress)
    client = x509.load_pem_x509_certificate((directory / "node2-kubelet-client.crt").read_bytes())
    assert client.subject.rfc4514_string() == f"CN=system:node:{layout.node(2).name},O=system:nodes"
    before = (directory / "node2-kubelet-client.crt").read_bytes()
    pki.add_leaves(directory, leaves)
    assert (directory / "node2-kubelet-client.crt").read_bytes() == before
