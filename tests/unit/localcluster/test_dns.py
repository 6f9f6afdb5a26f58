"""The local cluster's DNS wiring: the kubelet's resolver, CoreDNS's zone, and the kube-dns Service."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import components, dns  # noqa: E402
from localcluster.layout import CLUSTER_DOMAIN, DNS_SERVICE_IP, NODE_IP, Layout  # noqa: E402


def _layout(tmp_path: Path) -> Layout:
    return Layout(state=tmp_path / "state", cache=tmp_path / "cache")


def test_every_kubelet_hands_pods_the_kube_dns_address(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    for index in (1, 2):
        config = yaml.safe_load(components.kubelet_config(layout.node(index)))
        assert config["clusterDNS"] == [DNS_SERVICE_IP]
        assert config["clusterDomain"] == CLUSTER_DOMAIN


def test_the_service_and_its_endpoints_reach_coredns_on_node_one(tmp_path: Path) -> None:
    service, endpoints = dns.objects()
    assert service["spec"]["clusterIP"] == DNS_SERVICE_IP  # type: ignore[index]
    assert "selector" not in service["spec"]  # type: ignore[operator]
    assert endpoints["metadata"]["labels"]["kubernetes.io/service-name"] == "kube-dns"  # type: ignore[index]
    assert endpoints["endpoints"] == [{"addresses": [NODE_IP], "conditions": {"ready": True}}]
    service_ports = {(p["name"], p["protocol"]) for p in service["spec"]["ports"]}  # type: ignore[index]
    assert service_ports == {(p["name"], p["protocol"]) for p in endpoints["ports"]}  # type: ignore[union-attr]


def test_coredns_serves_the_cluster_zone_where_the_endpoints_say(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    corefile = dns.corefile(layout)
    assert f"bind {NODE_IP}" in corefile
    assert f"kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa" in corefile
    assert str(layout.kubeconfig(dns.KUBECONFIG_USER)) in corefile
    assert f"127.0.0.1:{dns.READY_PORT}" in dns.process(layout).ready_url  # type: ignore[operator]
    assert dns.KUBECONFIG_USER in components.KUBECONFIG_USERS
