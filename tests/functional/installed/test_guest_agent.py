"""The guest agent and guest access, end to end on the cluster with the Fedora-compatible test guest (its
QEMU guest agent on org.qemu.guest_agent.0, dropbear SSH, a /data file system that freezing blocks):

- the agent connects (``AgentConnected``), and what it reports reaches the VMI's status (``guestOSInfo``,
  guest interface addresses) and ``virtctl guestosinfo``/``userlist``/``fslist`` (the raw subresources too);
- an SSH key from a Secret propagated by the agent (``AccessCredentialsSynchronized``) lets ``virtctl ssh``
  run a command and ``virtctl scp`` copy both ways; a key added to the Secret later works without a restart;
- freeze blocks a write until unfreeze, and a freeze without unfreeze thaws after its timeout; an online
  snapshot of the VM freezes the guest for its VolumeSnapshot and thaws it after (``GuestAgent``);
- an agent channel flooded with garbage leaves the launcher and virt-handler answering, and the agent is
  back once it runs again.

One VM is booted for the module; the tests run in file order and leave it as the next one expects it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from localcluster import install
from localcluster.handle import Cluster
from localcluster.metrics import scrape_component
from localcluster.pvc_vms import claim
from localcluster.up import virtctl
from localcluster.vmis import wait_vmi_phase

from kubevirt_testing.guest_console import PROMPT, Expecter, configure_console, run, virt_api_console
from kubevirt_testing.waiting import first_result

NAME = "agent-guest"
SECRET = "agent-guest-keys"
DATA_CLAIM = "agent-guest-data"
BOOT_TIMEOUT = 300.0
AGENT_TIMEOUT = 180.0
# A Secret reaches the pod within the kubelet's sync period (about a minute); the launcher looks every 15 s.
SECRET_PROPAGATION_TIMEOUT = 240.0
SUBRESOURCE = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachineinstances/{name}/{sub}"

pytestmark = pytest.mark.timeout(900)


@dataclass
class Guest:
    namespace: str
    key: Path  # the private key whose public half the Secret holds at first
    console: Expecter | None = None


def _key_pair(path: Path) -> str:
    """An Ed25519 key pair at ``path`` (and ``path.pub``); returns the public key line."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test@agent", "-f", str(path)], check=True
    )
    return Path(f"{path}.pub").read_text().strip()


def _vm(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "runStrategy": "Always",
            "template": {
                "metadata": {"labels": {"kubevirt.io/vm": NAME}},
                "spec": {
                    "domain": {
                        "resources": {"requests": {"memory": "128Mi"}},
                        "devices": {
                            "disks": [
                                {"name": "containerdisk", "disk": {"bus": "virtio"}},
                                {"name": "data", "disk": {"bus": "virtio"}},
                            ],
                            "interfaces": [{"name": "default", "masquerade": {}}],
                        },
                    },
                    "networks": [{"name": "default", "pod": {}}],
                    "terminationGracePeriodSeconds": 0,
                    "accessCredentials": [
                        {
                            "sshPublicKey": {
                                "source": {"secret": {"secretName": SECRET}},
                                "propagationMethod": {"qemuGuestAgent": {"users": ["fedora"]}},
                            }
                        }
                    ],
                    "volumes": [
                        {
                            "name": "containerdisk",
                            "containerDisk": {
                                "image": "localhost/kubevirt/test-guest-fedora-compatible:devel"
                            },
                        },
                        # A claim the snapshot takes a VolumeSnapshot of.
                        {"name": "data", "persistentVolumeClaim": {"claimName": DATA_CLAIM}},
                    ],
                },
            },
        },
    }


def _secret(namespace: str, keys: list[str]) -> dict[str, Any]:
    data = {f"key{index}": base64.b64encode(key.encode()).decode() for index, key in enumerate(keys)}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": namespace},
        "data": data,
    }


@pytest.fixture(scope="module")
def guest(cluster: Cluster, kubevirt: float, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guest]:
    key = tmp_path_factory.mktemp("ssh") / "id_ed25519"
    public = _key_pair(key)
    gate = install.feature_gates(cluster, "Snapshot")
    with gate, cluster.vm_namespace(f"ft-agent-{os.getpid() % 10000}") as namespace:
        cluster.kubectl("apply", "-f", "-", stdin=json.dumps(_secret(namespace, [public])))
        data = claim(DATA_CLAIM, "64Mi", block=True)
        cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(data))
        cluster.kubectl("apply", "-f", "-", stdin=json.dumps(_vm(namespace)))
        wait_vmi_phase(cluster, NAME, namespace, "Running", timeout=BOOT_TIMEOUT)
        yield Guest(namespace, key)


def _vmi(cluster: Cluster, guest: Guest) -> dict[str, Any]:
    return cluster.find("vmi", NAME, guest.namespace) or {}


def _condition(vmi: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (vmi.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _virtctl_json(cluster: Cluster, guest: Guest, *args: str) -> Any:
    done = virtctl(cluster, *args, "-n", guest.namespace)
    assert done.returncode == 0, f"virtctl {' '.join(args)}: {done.stderr}"
    return json.loads(done.stdout)


def _raw(cluster: Cluster, guest: Guest, sub: str) -> Any:
    path = SUBRESOURCE.format(namespace=guest.namespace, name=NAME, sub=sub)
    return json.loads(cluster.kubectl("get", "--raw", path).stdout)


def _console(cluster: Cluster, guest: Guest) -> Expecter:
    """The guest's serial console, logged in as KubeVirt's LoginToFedora does (fedora/fedora, sudo su)."""
    if guest.console is None:
        expecter = virt_api_console(str(cluster.kubeconfig), guest.namespace, NAME)
        expecter.send("\n")
        expecter.expect(" login: ", 180)
        expecter.send("fedora\n")
        expecter.expect("Password:", 60)
        expecter.send("fedora\n")
        expecter.expect(r"\[fedora@[^ ]+ ~\]\$ ", 60)
        expecter.send("sudo su\n")
        expecter.expect(r"\[root@[^ ]+ fedora\]\# ", 60)
        configure_console(expecter, sudo=False)
        guest.console = expecter
    return guest.console


def test_the_agent_connects_and_its_reports_reach_the_vmi_and_virtctl(cluster: Cluster, guest: Guest) -> None:
    vmi = first_result(
        "AgentConnected",
        lambda: _condition(_vmi(cluster, guest), "AgentConnected") and _vmi(cluster, guest),
        AGENT_TIMEOUT,
    )
    assert _condition(vmi, "AgentVersionNotSupported") is None  # Debian's qemu-ga offers every basic command
    _console(cluster, guest)  # a console login, which the agent's user list shows

    def reported() -> dict[str, Any] | None:
        status = _vmi(cluster, guest).get("status") or {}
        return status if (status.get("guestOSInfo") or {}).get("id") == "fedora" else None

    status = first_result("guestOSInfo", reported, AGENT_TIMEOUT)
    assert status["guestOSInfo"]["name"] == "Fedora Linux"
    assert status["guestOSInfo"]["kernelRelease"]
    (interface,) = [i for i in status["interfaces"] if i.get("name") == "default"]
    assert "guest-agent" in interface["infoSource"]
    assert interface["interfaceName"] == "eth0"
    assert interface["ipAddress"]

    info = _virtctl_json(cluster, guest, "guestosinfo", NAME)
    assert info["os"]["id"] == "fedora"
    assert info["hostname"] == NAME
    assert info["guestAgentVersion"]
    assert {"name": "guest-fsfreeze-freeze", "enabled": True} in info["supportedCommands"]
    assert _raw(cluster, guest, "guestosinfo")["os"] == info["os"]  # what KubeVirt's virtctl reads

    def logged_in() -> list[str]:
        users = _virtctl_json(cluster, guest, "userlist", NAME)
        return [user["userName"] for user in users["items"]]

    assert "fedora" in first_result("the console login in userlist", logged_in, 90)  # polled every 10 s
    filesystems = _virtctl_json(cluster, guest, "fslist", NAME)
    (data,) = [fs for fs in filesystems["items"] if fs["mountPoint"] == "/data"]
    assert data["fileSystemType"] == "ext4"
    assert (
        _raw(cluster, guest, "filesystemlist")["items"][0]["mountPoint"]
        == filesystems["items"][0]["mountPoint"]
    )


def test_kubevirt_metrics_follow_the_running_guest(cluster: Cluster, guest: Guest) -> None:
    """The components' /metrics (scraped as Prometheus would, through the pod proxy): virt-handler's
    per-VMI series move with the guest's work, virt-controller's and virt-api's describe it."""
    node = _vmi(cluster, guest)["status"]["nodeName"]
    mine = {"namespace": guest.namespace, "name": NAME}

    def handler(name: str, **labels: str) -> float:
        values = scrape_component(cluster, "virt-handler", node).values(name, **mine, **labels)
        assert len(values) == 1, (name, labels, values)
        return values[0]

    cpu_before = handler("kubevirt_vmi_cpu_usage_seconds_total")
    received_before = handler("kubevirt_vmi_network_receive_bytes_total", interface="default")
    console = _console(cluster, guest)
    # Four busy seconds of guest CPU, and traffic to the pod network's gateway.
    run(
        console,
        "timeout 4 sh -c 'while :; do :; done'; ping -c 3 -W 1 $(ip route | awk '/default/ {print $3}')",
        60,
    )
    assert handler("kubevirt_vmi_cpu_usage_seconds_total") >= cpu_before + 3
    assert handler("kubevirt_vmi_network_receive_bytes_total", interface="default") > received_before
    assert handler("kubevirt_vmi_memory_resident_bytes") > 16 * 2**20
    assert handler("kubevirt_vmi_storage_read_traffic_bytes_total", drive="containerdisk") > 0
    assert handler("kubevirt_vmi_vcpu_seconds_total", id="0", state="running") > 0
    # From the guest agent's file system list.
    assert handler("kubevirt_vmi_filesystem_capacity_bytes", mount_point="/data") > 0

    controller = scrape_component(cluster, "virt-controller")
    info = [s for s in controller.samples if s.name == "kubevirt_vmi_info" and s.labels.get("name") == NAME]
    assert [(s.labels["phase"], s.labels["node"], s.labels["guest_os_name"]) for s in info] == [
        ("running", node, "Fedora Linux")
    ]
    overhead = controller.values(
        "kubevirt_vmi_launcher_memory_overhead_bytes", namespace=guest.namespace, name=NAME
    )
    assert len(overhead) == 1
    assert overhead[0] > 100 * 2**20  # KubeVirt's fixed share alone is above that
    assert controller.values("kubevirt_virt_controller_leading_status") in ([0.0, 1.0], [1.0, 0.0], [1.0])
    # Work queues under KubeVirt's names, which its dashboards select on.
    assert sum(controller.values("kubevirt_workqueue_adds_total", name="virt-controller-vmi")) > 0
    handler_queues = scrape_component(cluster, "virt-handler", node)
    assert sum(handler_queues.values("kubevirt_workqueue_adds_total", name="virt-handler-vm")) > 0
    # The console the test holds open through virt-api.
    api = scrape_component(cluster, "virt-api")
    assert sum(api.values("kubevirt_console_active_connections", namespace=guest.namespace, vmi=NAME)) == 1
    assert scrape_component(cluster, "virt-operator").values("kubevirt_virt_operator_ready_status")


def _ssh(cluster: Cluster, guest: Guest, key: Path, command: str) -> subprocess.CompletedProcess[str]:
    target = f"fedora@vmi/{NAME}"
    args = ["ssh", "--local-ssh=false", "--known-hosts=", "-i", str(key), "-c", command, target]
    return virtctl(cluster, *args, "-n", guest.namespace)


def test_an_agent_propagated_key_lets_virtctl_ssh_and_scp_in(
    cluster: Cluster, guest: Guest, tmp_path: Path
) -> None:
    synced = first_result(
        "AccessCredentialsSynchronized",
        lambda: _condition(_vmi(cluster, guest), "AccessCredentialsSynchronized"),
        SECRET_PROPAGATION_TIMEOUT,
    )
    assert synced["status"] == "True", synced
    done = _ssh(cluster, guest, guest.key, "id -un; hostname")
    assert done.returncode == 0, done.stderr
    # KubeVirt's virtctl prints its warning about the skipped host key check on stdout too.
    assert done.stdout.splitlines() == [
        "WARNING: skipping hostkey check, provide --known-hosts to fix this",
        "fedora",
        NAME,
    ]

    upload = tmp_path / "up.txt"
    upload.write_text("from the test\n" * 100)
    copy = ["scp", "--local-ssh=false", "--known-hosts=", "-i", str(guest.key)]
    sent = virtctl(cluster, *copy, str(upload), f"fedora@vmi/{NAME}:up.txt", "-n", guest.namespace)
    assert sent.returncode == 0, sent.stderr
    back = tmp_path / "back.txt"
    fetched = virtctl(cluster, *copy, f"fedora@vmi/{NAME}:up.txt", str(back), "-n", guest.namespace)
    assert fetched.returncode == 0, fetched.stderr
    assert back.read_text() == upload.read_text()

    # A second key added to the Secret reaches the guest while it runs.
    second = tmp_path / "second"
    public = _key_pair(second)
    first_public = Path(f"{guest.key}.pub").read_text().strip()
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(_secret(guest.namespace, [first_public, public])))
    first_result(
        "the second key works",
        lambda: _ssh(cluster, guest, second, "true").returncode == 0,
        SECRET_PROPAGATION_TIMEOUT,
        interval=10,
    )


def _put(cluster: Cluster, guest: Guest, sub: str, body: dict[str, Any] | None = None) -> None:
    """A PUT of a VMI subresource, as KubeVirt's client makes it (its virtctl has no freeze command)."""
    path = SUBRESOURCE.format(namespace=guest.namespace, name=NAME, sub=sub)
    cluster.kubectl("replace", "--raw", path, "-f", "-", stdin=json.dumps(body or {}))


def _frozen(cluster: Cluster, guest: Guest) -> str:
    return str((_vmi(cluster, guest).get("status") or {}).get("fsFreezeStatus") or "")


def test_freeze_blocks_writes_until_unfreeze_and_a_forgotten_freeze_thaws(
    cluster: Cluster, guest: Guest
) -> None:
    console = _console(cluster, guest)
    _put(cluster, guest, "freeze", {"unfreezeTimeout": "5m0s"})
    first_result("fsFreezeStatus frozen", lambda: _frozen(cluster, guest) == "frozen", 60)
    console.send("echo written > /data/file; echo WROTE-$((40 + 2))\n")
    with pytest.raises(AssertionError):
        console.expect("WROTE-42", 10)  # the write waits for the thaw
    _put(cluster, guest, "unfreeze")
    console.expect("WROTE-42", 60)
    console.expect(PROMPT, 30)
    first_result("fsFreezeStatus gone", lambda: _frozen(cluster, guest) == "", 60)
    assert run(console, "cat /data/file") == "written"

    # KubeVirt's "Freeze without Unfreeze should trigger unfreeze after timeout".
    _put(cluster, guest, "freeze", {"unfreezeTimeout": "20s"})
    first_result("fsFreezeStatus frozen", lambda: _frozen(cluster, guest) == "frozen", 60)
    began = time.monotonic()
    first_result("the automatic thaw", lambda: _frozen(cluster, guest) == "", 120)
    assert time.monotonic() - began < 90


def test_an_online_snapshot_freezes_the_guest_through_its_agent(cluster: Cluster, guest: Guest) -> None:
    snapshot = {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineSnapshot",
        "metadata": {"name": "agent-snap", "namespace": guest.namespace},
        "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": NAME}},
    }
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(snapshot))

    def ready() -> dict[str, Any] | None:
        found = cluster.find("vmsnapshot", "agent-snap", guest.namespace) or {}
        return found if (found.get("status") or {}).get("readyToUse") else None

    status = first_result("the snapshot readyToUse", ready, 240)["status"]
    assert status["indications"] == ["GuestAgent", "Online"]
    assert status["snapshotVolumes"]["includedVolumes"] == ["data"]
    # The launcher froze the guest for the VolumeSnapshot and thawed it after; it is thawed now.
    (pod,) = json.loads(
        cluster.kubectl(
            "get", "pods", "-n", guest.namespace, "-l", "kubevirt.io=virt-launcher", "-o", "json"
        ).stdout
    )["items"]
    log = cluster.kubectl("logs", "-n", guest.namespace, pod["metadata"]["name"], "-c", "compute").stdout
    assert "Freezed vmi" in log
    assert "Unfreezed vmi" in log
    assert _frozen(cluster, guest) == ""


def test_a_flooded_agent_channel_leaves_launcher_and_handler_answering(
    cluster: Cluster, guest: Guest
) -> None:
    console = _console(cluster, guest)
    run(console, "systemctl stop qemu-guest-agent")
    port = run(console, "grep -l org.qemu.guest_agent.0 /sys/class/virtio-ports/*/name | cut -d/ -f5").strip()
    assert port.startswith("vport"), port
    # Random bytes, then a line far longer than any reply, then a reply to no request; each write given up
    # after 20 s (libvirt stops reading a channel whose agent it dropped, and the port then blocks).
    write = f"timeout 20 dd of=/dev/{port} bs=64k 2>/dev/null"
    run(console, f"head -c 262144 /dev/urandom | {write}", 60)
    run(console, f"head -c 4194304 /dev/zero | tr '\\0' x | {write}", 60)
    run(console, f'echo \'{{"return": {{"bogus": 1}}}}\' | {write}', 60)

    began = time.monotonic()
    answered = virtctl(cluster, "guestosinfo", NAME, "-n", guest.namespace, timeout=120)
    assert time.monotonic() - began < 90  # bounded: an error or the last report, never a hang
    assert answered.returncode in (0, 1), answered
    vmi = _vmi(cluster, guest)
    assert vmi["status"]["phase"] == "Running"
    handler_pods = json.loads(
        cluster.kubectl(
            "get", "pods", "-n", "kubevirt", "-l", "kubevirt.io=virt-handler", "-o", "json"
        ).stdout
    )["items"]
    launchers = json.loads(
        cluster.kubectl(
            "get", "pods", "-n", guest.namespace, "-l", "kubevirt.io=virt-launcher", "-o", "json"
        ).stdout
    )["items"]
    restarts = [
        (pod["metadata"]["name"], status["name"], status.get("restartCount", 0))
        for pod in [*handler_pods, *launchers]
        for status in pod["status"]["containerStatuses"]
    ]
    assert [entry for entry in restarts if entry[2]] == []

    run(console, "systemctl start qemu-guest-agent")
    first_result(
        "the agent answers again",
        lambda: (
            virtctl(cluster, "guestosinfo", NAME, "-n", guest.namespace).returncode == 0
            and _condition(_vmi(cluster, guest), "AgentConnected")
        ),
        AGENT_TIMEOUT,
    )
