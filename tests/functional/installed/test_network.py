"""VM networking on the cluster (issue 14): a masquerade VMI and a bridge VMI of the test guest on the pod
network, reached from another pod, through a Service, ``virtctl expose`` and ``virtctl port-forward``,
reaching a Service themselves, and leaving nothing on the node once deleted.

Two guests boot for the whole module (one per binding). Their user data starts a second HTTP server on
port 8080 (which the masquerade VMI's ``ports`` list leaves out) and fetches a page from a Service's
cluster IP with busybox's nc (the guest's static busybox wget crashes), printing it on the serial console;
``guest-console-log`` shows the console.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from localcluster.handle import Cluster
from localcluster.up import virtctl
from localcluster.vmis import wait_vmi_phase
from pyroute2 import IPRoute

from kubevirt.network.netns import run_in_netns
from kubevirt.network.nft.libnft import Nft
from kubevirt_testing.waiting import first_result

JSON = dict[str, Any]
RUNNING_TIMEOUT = 180.0
GUEST_TIMEOUT = 180.0  # from Running to the guest's console showing what the test waits for
HELPER = "net-helper"  # a pod serving the Service the guests fetch from, and the client of the guests
HELPER_PORT = 8000
MARKER = "kubevirt-py-network-marker"
EXTRA_PORT = 8080  # the guests listen here too; the masquerade VMI's ports list does not forward it
WHOAMI = "whoami"  # the page where a guest's user data writes the guest's name
HANDLER_NETWORK_CACHE = Path("/var/run/kubevirt-private/network-info-cache")
FORWARDED_PORTS = [{"name": "http", "port": 80, "protocol": "TCP"}]


@dataclass(frozen=True)
class Guest:
    name: str
    namespace: str
    uid: str
    pod: str
    pod_ip: str
    netns_inode: int  # the launcher pod's network namespace, as the node sees it


def _user_data(name: str, service_ip: str) -> str:
    return f"""#!/bin/sh
echo {name} > /www/{WHOAMI}
httpd -p {EXTRA_PORT} -h /www
(
  i=0
  while [ $i -lt 90 ]; do
    printf 'GET /marker HTTP/1.0\\r\\n\\r\\n' | nc -w 3 {service_ip} {HELPER_PORT} > /tmp/fetched 2>/dev/null
    if grep -q {MARKER} /tmp/fetched; then
      echo "service says: $(grep -o {MARKER} /tmp/fetched)"
      break
    fi
    i=$((i+1))
    sleep 2
  done
) &
"""


def _vmi(name: str, binding: str, service_ip: str) -> JSON:
    interface: JSON = {"name": "default", binding: {}}
    if binding == "masquerade":
        interface["ports"] = FORWARDED_PORTS
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "labels": {"test": "network"}},
        "spec": {
            "domain": {
                "resources": {"requests": {"memory": "128Mi"}},
                "devices": {
                    "disks": [
                        {"name": "containerdisk", "disk": {"bus": "virtio"}},
                        {"name": "cloudinitdisk", "disk": {"bus": "virtio"}},
                    ],
                    "interfaces": [interface],
                },
            },
            "networks": [{"name": "default", "pod": {}}],
            "terminationGracePeriodSeconds": 0,
            "volumes": [
                {
                    "name": "containerdisk",
                    "containerDisk": {"image": "localhost/kubevirt/test-guest-container-disk:devel"},
                },
                {"name": "cloudinitdisk", "cloudInitNoCloud": {"userData": _user_data(name, service_ip)}},
            ],
        },
    }


def _helper_objects(cluster: Cluster) -> list[JSON]:
    serve = (
        f"mkdir -p /tmp/www && echo {MARKER} > /tmp/www/marker && cd /tmp/www && "
        f"exec python3 -m http.server {HELPER_PORT}"
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": HELPER, "labels": {"app": HELPER}},
        "spec": {
            "containers": [
                {
                    "name": "helper",
                    "image": cluster.image("virt-launcher"),
                    "imagePullPolicy": "Never",
                    "command": ["/bin/sh", "-c", serve],
                    "ports": [{"containerPort": HELPER_PORT}],
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": HELPER},
        "spec": {"selector": {"app": HELPER}, "ports": [{"port": HELPER_PORT, "targetPort": HELPER_PORT}]},
    }
    return [pod, service]


def _poll(what: str, check: Callable[[], Any], timeout: float, interval: float = 2.0) -> Any:
    return first_result(what, check, timeout, interval)


def _launcher_pod(cluster: Cluster, namespace: str, uid: str) -> JSON | None:
    pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", f"kubevirt.io/created-by={uid}")
    items = pods["items"]
    assert isinstance(items, list)
    return items[0] if items else None


def _launcher_pid(uid: str) -> int | None:
    """The node's PID of a process of the VMI's virt-launcher (its command line has ``--uid <uid>``)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            words = (entry / "cmdline").read_bytes().split(b"\0")
            if b"--uid" in words and uid.encode() in words:
                return int(entry.name)
    return None


def _netns_in_use(inode: int) -> bool:
    """Whether a process is in the network namespace, or a mount (the runtime pins pods' ones) keeps it."""
    if f"net:[{inode}]" in Path("/proc/self/mountinfo").read_text():
        return True
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(entry / "ns" / "net").st_ino == inode:
                    return True
    return False


def _console(cluster: Cluster, guest: Guest) -> str:
    logs = cluster.kubectl("logs", "-n", guest.namespace, guest.pod, "-c", "guest-console-log", check=False)
    return logs.stdout


def _wait_console(cluster: Cluster, guest: Guest, pattern: str) -> re.Match[str]:
    found: re.Match[str] = _poll(
        f"{guest.name}'s console showing {pattern!r}",
        lambda: re.search(pattern, _console(cluster, guest)),
        GUEST_TIMEOUT,
    )
    return found


def _await_running(cluster: Cluster, namespace: str, name: str) -> Guest:
    uid = wait_vmi_phase(cluster, name, namespace, timeout=RUNNING_TIMEOUT, interval=2.0)["metadata"]["uid"]
    pod = _launcher_pod(cluster, namespace, uid)
    assert pod is not None
    pid = _poll(f"{name}'s virt-launcher process", lambda: _launcher_pid(uid), 30, 0.5)
    return Guest(
        name=name,
        namespace=namespace,
        uid=uid,
        pod=pod["metadata"]["name"],
        pod_ip=pod["status"]["podIP"],
        netns_inode=os.stat(f"/proc/{pid}/ns/net").st_ino,
    )


def _host_network() -> dict[str, Any]:
    """What the node's own network namespace holds that a binding could leave behind."""
    with IPRoute() as ipr:
        links = {
            str(link.get_attr("IFLA_IFNAME")): str(link.get_nested("IFLA_LINKINFO", "IFLA_INFO_KIND") or "")
            for link in ipr.get_links()
        }
    with Nft() as nft:
        ruleset = nft.run("list ruleset")
    return {"links": links, "ruleset": ruleset}


@pytest.fixture(scope="module")
def net_namespace(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    name = f"ft-network-{os.getpid() % 100000}"
    cluster.fresh_namespace(name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture(scope="module")
def host_before(net_namespace: str) -> dict[str, Any]:
    return _host_network()


@pytest.fixture(scope="module")
def service_ip(cluster: Cluster, net_namespace: str, host_before: dict[str, Any]) -> str:
    cluster.kubectl("apply", "-n", net_namespace, "-f", "-", stdin=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": _helper_objects(cluster)}
    ))  # fmt: skip
    cluster.kubectl("wait", "-n", net_namespace, "--for=condition=Ready", f"pod/{HELPER}", "--timeout=120s")
    found = cluster.find("service", HELPER, net_namespace)
    assert found is not None
    return str(found["spec"]["clusterIP"])


@pytest.fixture(scope="module")
def guests(cluster: Cluster, net_namespace: str, service_ip: str) -> Iterator[dict[str, Guest]]:
    """Both VMIs, created together so that they boot side by side."""
    specs = {binding: _vmi(f"{binding}-vmi", binding, service_ip) for binding in ("masquerade", "bridge")}
    try:
        for spec in specs.values():
            cluster.kubectl("create", "-n", net_namespace, "-f", "-", stdin=json.dumps(spec))
        yield {
            binding: _await_running(cluster, net_namespace, spec["metadata"]["name"])
            for binding, spec in specs.items()
        }
    finally:
        for spec in specs.values():  # gone before KubeVirt is uninstalled after the last module
            name = spec["metadata"]["name"]
            cluster.kubectl("delete", "vmi", name, "-n", net_namespace, "--timeout=120s", check=False)


@pytest.fixture(scope="module")
def masquerade(guests: dict[str, Guest]) -> Guest:
    return guests["masquerade"]


@pytest.fixture(scope="module")
def bridge(guests: dict[str, Guest]) -> Guest:
    return guests["bridge"]


def _from_helper(cluster: Cluster, namespace: str, url: str) -> subprocess.CompletedProcess[str]:
    """An HTTP GET from the helper pod (another pod of the cluster): the body, or the error."""
    fetch = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=10).read().decode())"
    return cluster.kubectl("exec", "-n", namespace, HELPER, "--", "python3", "-c", fetch, check=False)


def _assert_helper_gets_page(cluster: Cluster, guest: Guest, url: str) -> None:
    """The guest's own page (its user data wrote its name there), fetched by the helper pod from ``url``
    (retried while the guest settles)."""
    fetched = _poll(
        f"{guest.name}'s page from the helper pod at {url}",
        lambda: _from_helper(cluster, guest.namespace, url + WHOAMI).stdout,
        60,
    )
    assert fetched.strip() == guest.name


def _status_interface(cluster: Cluster, guest: Guest) -> JSON:
    vmi = cluster.find("vmi", guest.name, guest.namespace)
    assert vmi is not None
    interfaces = vmi["status"].get("interfaces") or []
    assert interfaces, f"{guest.name}: no status.interfaces"
    first: JSON = interfaces[0]
    return first


def test_masquerade_vmi_gets_10_0_2_2_and_reports_the_pod_ip(cluster: Cluster, masquerade: Guest) -> None:
    _wait_console(cluster, masquerade, r"udhcpc: eth0 has 10\.0\.2\.2\b")
    assert _status_interface(cluster, masquerade)["ipAddress"] == masquerade.pod_ip

    # The NAT lives in the pod's network namespace (and, as the last test checks, only there).
    pid = _launcher_pid(masquerade.uid)
    assert pid is not None
    ruleset = run_in_netns(Path(f"/proc/{pid}/ns/net"), lambda: Nft().run("list table ip nat"))
    assert "KUBEVIRT_PREINBOUND" in ruleset
    assert "dnat to 10.0.2.2" in ruleset


def test_another_pod_reaches_the_guest_http_server(
    cluster: Cluster, net_namespace: str, masquerade: Guest
) -> None:
    _wait_console(cluster, masquerade, r"test guest ready")
    _assert_helper_gets_page(cluster, masquerade, f"http://{masquerade.pod_ip}:80/")


def test_guest_reaches_a_service_cluster_ip(cluster: Cluster, masquerade: Guest, bridge: Guest) -> None:
    for guest in (masquerade, bridge):
        _wait_console(cluster, guest, f"service says: {MARKER}")


def test_ports_list_limits_what_is_forwarded(
    cluster: Cluster, net_namespace: str, masquerade: Guest, bridge: Guest
) -> None:
    # Both guests listen on the extra port: the bridge VMI, which has the pod's address itself, answers there.
    for guest in (masquerade, bridge):
        _wait_console(cluster, guest, r"test guest ready")
    _assert_helper_gets_page(cluster, bridge, f"http://{bridge.pod_ip}:{EXTRA_PORT}/")
    # The masquerade VMI lists port 80 only: 80 reaches the guest, the extra port stays with the pod.
    _assert_helper_gets_page(cluster, masquerade, f"http://{masquerade.pod_ip}/")
    refused = _from_helper(cluster, net_namespace, f"http://{masquerade.pod_ip}:{EXTRA_PORT}/")
    assert refused.returncode != 0
    assert "Connection refused" in refused.stderr


def test_bridge_vmi_gets_the_pod_ip(cluster: Cluster, net_namespace: str, bridge: Guest) -> None:
    _wait_console(cluster, bridge, rf"udhcpc: eth0 has {re.escape(bridge.pod_ip)}\b")
    assert _status_interface(cluster, bridge)["ipAddress"] == bridge.pod_ip
    _wait_console(cluster, bridge, r"test guest ready")
    _assert_helper_gets_page(cluster, bridge, f"http://{bridge.pod_ip}/")


def test_virtctl_expose_gives_a_service_that_reaches_the_guest(
    cluster: Cluster, net_namespace: str, masquerade: Guest
) -> None:
    service = "masq-http"
    exposed = virtctl(
        cluster, "expose", "vmi", masquerade.name, "-n", net_namespace, "--name", service, "--port", "80"
    )
    assert exposed.returncode == 0, exposed.stderr
    found = cluster.find("service", service, net_namespace)
    assert found is not None
    url = f"http://{found['spec']['clusterIP']}:80/"
    _wait_console(cluster, masquerade, r"test guest ready")
    _assert_helper_gets_page(cluster, masquerade, url)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_virtctl_port_forward_returns_the_guest_page(
    cluster: Cluster, net_namespace: str, masquerade: Guest
) -> None:
    _wait_console(cluster, masquerade, r"test guest ready")
    port = _free_port()
    command = [
        str(Path(sys.executable).with_name("virtctl")),
        "--kubeconfig",
        str(cluster.kubeconfig),
        "port-forward",
        f"vmi/{masquerade.name}/{net_namespace}",
        f"{port}:80",
    ]
    forwarder = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:

        def fetch() -> str:
            url = f"http://127.0.0.1:{port}/{WHOAMI}"
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=10) as answer:
                return str(answer.read().decode())
            assert forwarder.poll() is None, f"virtctl port-forward exited: {forwarder.communicate()}"
            return ""

        assert _poll("the guest's page through port-forward", fetch, 60, 1.0).strip() == masquerade.name
    finally:
        forwarder.terminate()
        forwarder.wait(10)


def test_deletion_leaves_nothing_on_the_node(
    cluster: Cluster, net_namespace: str, guests: dict[str, Guest], host_before: dict[str, Any]
) -> None:
    for guest in guests.values():
        cluster.kubectl("delete", "vmi", guest.name, "-n", net_namespace, "--wait=true", "--timeout=120s")
    for guest in guests.values():
        _poll(
            f"{guest.name}'s launcher pod gone",
            lambda g=guest: _launcher_pod(cluster, net_namespace, g.uid) is None,
            120,
        )
        # The pod's network namespace, with its bridge, tap and NAT rules, went with the pod.
        _poll(f"{guest.name}'s network namespace gone", lambda g=guest: not _netns_in_use(g.netns_inode), 60)
        record = HANDLER_NETWORK_CACHE / guest.uid  # virt-handler's record of the pod's interface
        _poll(f"{guest.name}'s network record on the node gone", lambda r=record: not r.exists(), 60)
    after = _host_network()
    new_links = {name: kind for name, kind in after["links"].items() if name not in host_before["links"]}
    assert not {n: k for n, k in new_links.items() if k in ("bridge", "tun") or n.startswith(("tap", "k6t-"))}
    assert "KUBEVIRT_" not in after["ruleset"]
    assert "10.0.2.2" not in after["ruleset"]
