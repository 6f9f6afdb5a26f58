"""``virtctl diagnose`` against a real kube-apiserver, through the user's kubeconfig as the CLI runs.

There are no controllers, scheduler or kubelet here: each test writes the VM, VMI, pod and node states
those would have written (status through the status subresource, as they do), then checks the verdict,
that the answer took under 2 s, and (for the RBAC case) what a user limited to VMs sees.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from localcluster.apiserver import ApiServer

from kubevirt.client import (
    EVENTS,
    NODES,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    KubeClient,
    NotFoundError,
)
from kubevirt.client.resources import ROLE_BINDINGS, ROLES, SERVICE_ACCOUNTS
from kubevirt.virtctl.root import root
from kubevirt_testing import vm_chain as chain

ANSWER_BUDGET_SECONDS = 2.0
JSON = dict[str, Any]


class Chain:
    """Writes one VM's chain in a test namespace; the nodes it adds are removed afterwards."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.node_name = f"node-{uuid.uuid4().hex[:6]}"
        self.nodes: list[str] = []

    def node(self, **fields: Any) -> None:
        fields.setdefault("heartbeat", datetime.now(UTC) - timedelta(seconds=20))
        # Emulation, as on this machine: the launcher asks for tun, no node offers kvm.
        fields.setdefault("allocatable", {"cpu": "2", "memory": "8Gi", "pods": "110", chain.TUN: "1k"})
        chain.put(self.kube, NODES, chain.node(self.node_name, **fields))
        self.nodes.append(self.node_name)
        chain.put(self.kube, PODS, chain.handler_pod(self.node_name, self.namespace))

    def vm(self, run_strategy: str = "Always", status: JSON | None = None) -> None:
        chain.put(
            self.kube,
            VIRTUAL_MACHINES,
            chain.vm("vm", self.namespace, run_strategy=run_strategy, status=status),
        )

    def vmi(self, phase: str, *, scheduled: bool, conditions: list[JSON]) -> str:
        node = self.node_name if scheduled else None
        created = chain.put(
            self.kube,
            VIRTUAL_MACHINE_INSTANCES,
            chain.vmi("vm", self.namespace, phase=phase, node=node, conditions=conditions),
        )
        return str(created["metadata"]["uid"])

    def pod(self, uid: str, **fields: Any) -> None:
        fields.setdefault("node", self.node_name)
        chain.put(self.kube, PODS, chain.launcher_pod("vm", self.namespace, uid, **fields))

    def remove_nodes(self) -> None:
        for name in self.nodes:
            with contextlib.suppress(NotFoundError):
                self.kube.delete(NODES, None, name)


@pytest.fixture
def vm_chain(kube: KubeClient, namespace: str) -> Iterator[Chain]:
    made = Chain(kube, namespace)
    yield made
    made.remove_nodes()


def diagnose(kubeconfig: Path, namespace: str, *args: str) -> tuple[int, str]:
    started = time.monotonic()
    result = CliRunner().invoke(root, ["--kubeconfig", str(kubeconfig), "diagnose", *args, "-n", namespace])
    elapsed = time.monotonic() - started
    assert elapsed < ANSWER_BUDGET_SECONDS, f"the answer took {elapsed:.2f}s"
    return result.exit_code, result.stdout  # not the logs other tests' leftover threads write to stderr


def links_of(kubeconfig: Path, namespace: str, kind: str = "vm") -> list[JSON]:
    _, output = diagnose(kubeconfig, namespace, kind, "vm", "-o", "json")
    links: list[JSON] = json.loads(output)
    return links


def test_a_halted_vm(apiserver: ApiServer, vm_chain: Chain, namespace: str) -> None:
    vm_chain.vm("Halted")
    code, output = diagnose(apiserver.kubeconfig, namespace, "vm", "vm")
    assert code == 1
    assert output.splitlines()[-1] == (
        "Stopped at the vm link: The VM is halted (runStrategy Halted): nothing starts it until a start "
        "request (virtctl start) arrives."
    )


def test_a_pending_vmi_asking_for_kvm_no_node_offers(
    apiserver: ApiServer, vm_chain: Chain, namespace: str
) -> None:
    vm_chain.node()
    vm_chain.vm(status={"printableStatus": "ErrorUnschedulable"})
    unschedulable = chain.condition("PodScheduled", "False", "Unschedulable", "0/1 nodes are available")
    uid = vm_chain.vmi("Scheduling", scheduled=False, conditions=[unschedulable])
    requests = {"cpu": "100m", "memory": "300Mi", chain.KVM: "1", chain.TUN: "1"}
    vm_chain.pod(uid, node=None, phase="Pending", requests=requests, conditions=[unschedulable])
    links = links_of(apiserver.kubeconfig, namespace)
    assert [link["status"] for link in links] == ["ok", "ok", "broken"]
    assert links[-1]["message"] == (
        "The launcher pod virt-launcher-vm-abcde can never be scheduled: "
        "devices.kubevirt.io/kvm 1 requested but no node offers more than 0."
    )
    assert links[-1]["evidence"]["conditions"] == [
        "PodScheduled=False Unschedulable: 0/1 nodes are available"
    ]


def test_image_pull_backoff(apiserver: ApiServer, vm_chain: Chain, namespace: str) -> None:
    vm_chain.node()
    vm_chain.vm(status={"printableStatus": "ImagePullBackOff"})
    synced = chain.condition("Synchronized", "False", "ImagePullBackOff", "Back-off pulling image")
    uid = vm_chain.vmi("Scheduling", scheduled=False, conditions=[synced])
    missing = "registry.local/virt-launcher:missing"
    said = f'Back-off pulling image "{missing}"'
    waiting = chain.waiting_container("ImagePullBackOff", said, image=missing)
    vm_chain.pod(
        uid, phase="Pending", containers=[waiting], conditions=[chain.condition("PodScheduled", "True")]
    )
    links = links_of(apiserver.kubeconfig, namespace)
    assert links[-1]["link"] == "containers"
    assert links[-1]["message"] == (
        f"Container compute (image {missing}) cannot start: ImagePullBackOff: {said} "
        "(pod virt-launcher-vm-abcde)."
    )


def _running(vm_chain: Chain) -> None:
    vm_chain.vm(status={"printableStatus": "Running", "created": True, "ready": True})
    uid = vm_chain.vmi("Running", scheduled=True, conditions=chain.ready_conditions())
    vm_chain.pod(uid)


def test_a_node_marked_unschedulable(apiserver: ApiServer, vm_chain: Chain, namespace: str) -> None:
    vm_chain.node(schedulable="false")
    _running(vm_chain)
    links = links_of(apiserver.kubeconfig, namespace)
    assert links[-1]["link"] == "node"
    assert links[-1]["message"] == (
        f"Node {vm_chain.node_name} is marked kubevirt.io/schedulable=false: virt-handler does not offer it "
        "for new VMIs."
    )


def test_a_stale_heartbeat(apiserver: ApiServer, vm_chain: Chain, namespace: str) -> None:
    vm_chain.node(heartbeat=datetime.now(UTC) - timedelta(minutes=9))
    _running(vm_chain)
    links = links_of(apiserver.kubeconfig, namespace, kind="vmi")
    assert [link["link"] for link in links] == ["vmi", "scheduling", "containers", "node"]
    assert links[-1]["message"].startswith(
        f"virt-handler's last heartbeat on node {vm_chain.node_name} is 9m"
    )
    assert links[-1]["evidence"]["virtHandler"]["ready"] == "True"


def test_a_healthy_running_chain(apiserver: ApiServer, vm_chain: Chain, namespace: str) -> None:
    vm_chain.node()
    _running(vm_chain)
    code, output = diagnose(apiserver.kubeconfig, namespace, "vm", "vm")
    assert code == 0, output
    assert output.splitlines()[-1] == "No broken link found; not checked: launcher."
    links = links_of(apiserver.kubeconfig, namespace)
    assert [(link["link"], link["status"]) for link in links] == [
        ("vm", "ok"),
        ("vmi", "ok"),
        ("scheduling", "ok"),
        ("containers", "ok"),
        ("node", "ok"),
        ("launcher", "unknown"),
        ("migration", "skipped"),
    ]


def _kubeconfig_for_vm_reader(apiserver: ApiServer, kube: KubeClient, namespace: str, path: Path) -> Path:
    """A service account allowed to get and list VirtualMachines, and nothing else, with a token."""
    kube.create(SERVICE_ACCOUNTS, namespace, {"metadata": {"name": "vm-reader"}})
    rule = {"apiGroups": ["kubevirt.io"], "resources": ["virtualmachines"], "verbs": ["get", "list"]}
    kube.create(ROLES, namespace, {"metadata": {"name": "vm-reader"}, "rules": [rule]})
    kube.create(
        ROLE_BINDINGS,
        namespace,
        {
            "metadata": {"name": "vm-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "vm-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "vm-reader", "namespace": namespace}],
        },
    )
    answer = json.loads(
        kube.request(
            "POST",
            SERVICE_ACCOUNTS.path(namespace, "vm-reader", "token"),
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
    )
    config = yaml.safe_load(apiserver.kubeconfig.read_text())
    config["users"] = [{"name": "vm-reader", "user": {"token": answer["status"]["token"]}}]
    config["contexts"][0]["context"]["user"] = "vm-reader"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_user_limited_to_vms_sees_forbidden_and_still_gets_an_answer(
    apiserver: ApiServer, kube: KubeClient, vm_chain: Chain, namespace: str, tmp_path: Path
) -> None:
    vm_chain.node()
    _running(vm_chain)
    reader = _kubeconfig_for_vm_reader(apiserver, kube, namespace, tmp_path / "vm-reader.kubeconfig")
    code, output = diagnose(reader, namespace, "vm", "vm", "-o", "json")
    assert code == 0, output
    links = {link["link"]: link for link in json.loads(output)}
    assert links["vm"]["status"] == "ok"
    assert links["vm"]["evidence"]["printableStatus"] == "Running"
    assert links["vmi"]["message"].startswith(
        f"could not see VirtualMachineInstance {namespace}/vm: forbidden"
    )
    assert links["scheduling"]["message"].startswith(f"could not see pods in namespace {namespace}")
    assert "forbidden" in links["scheduling"]["message"]
    assert links["migration"]["message"] == (
        f"could not see virtualmachineinstancemigrations in namespace {namespace}: forbidden."
    )
    assert {link["status"] for name, link in links.items() if name != "vm"} == {"unknown"}


def test_a_vm_refused_by_admission(
    apiserver: ApiServer, kube: KubeClient, vm_chain: Chain, namespace: str
) -> None:
    denied = (
        'admission webhook "virtualmachineinstances-create-validator.kubevirt.io" denied the request: '
        "spec.domain.devices.disks[0].name: Name of disk must be unique."
    )
    vm_chain.vm(status={"printableStatus": "Stopped"})
    kube.create(
        EVENTS,
        namespace,
        chain.warning_event(
            namespace,
            "VirtualMachine",
            "vm",
            "FailedCreate",
            f"Error creating virtual machine instance: {denied}",
        ),
    )
    links = links_of(apiserver.kubeconfig, namespace)
    assert [link["link"] for link in links] == ["vm", "vmi"]
    assert links[-1]["message"] == (
        "Admission refused the VMI the VM tried to create: "
        "spec.domain.devices.disks[0].name: Name of disk must be unique."
    )


def test_a_vm_in_start_failure_backoff(apiserver: ApiServer, vm_chain: Chain, namespace: str) -> None:
    retry = chain.stamp(datetime.now(UTC) + timedelta(minutes=2))
    failure = {"consecutiveFailCount": 2, "lastFailedVMIUID": "3f1c", "retryAfterTimestamp": retry}
    vm_chain.vm(status={"printableStatus": "CrashLoopBackOff", "startFailure": failure})
    links = links_of(apiserver.kubeconfig, namespace)
    assert links[-1]["link"] == "vm"
    assert links[-1]["message"].startswith(
        "The VM is in start-failure backoff (CrashLoopBackOff): the last 2 start(s) failed before the guest "
        f"ran (last VMI uid 3f1c); the next start is allowed at {retry} (in 1m"
    )


def test_a_paused_vmi(apiserver: ApiServer, vm_chain: Chain, namespace: str) -> None:
    vm_chain.node()
    vm_chain.vm(status={"printableStatus": "Paused"})
    paused = chain.condition("Paused", "True", "PausedByUser", "VMI was paused by user")
    uid = vm_chain.vmi("Running", scheduled=True, conditions=[*chain.ready_conditions(), paused])
    vm_chain.pod(uid)
    links = links_of(apiserver.kubeconfig, namespace)
    assert links[-1]["message"] == "The VMI is paused (PausedByUser); virtctl unpause resumes it."


def test_a_migration_with_no_second_node(
    apiserver: ApiServer, kube: KubeClient, vm_chain: Chain, namespace: str
) -> None:
    vm_chain.node()
    vm_chain.vm(status={"printableStatus": "Migrating", "created": True, "ready": True})
    uid = vm_chain.vmi("Running", scheduled=True, conditions=chain.ready_conditions())
    vm_chain.pod(uid)
    created = chain.put(
        kube, VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, chain.migration("mig", namespace, "vm", phase="Scheduling")
    )
    anti_affinity = "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."
    vm_chain.pod(
        uid,
        node=None,
        phase="Pending",
        name="virt-launcher-vm-target",
        labels={"kubevirt.io/migrationJobUID": created["metadata"]["uid"]},
        conditions=[chain.condition("PodScheduled", "False", "Unschedulable", anti_affinity)],
    )
    links = links_of(apiserver.kubeconfig, namespace)
    assert [(link["link"], link["status"]) for link in links][-3:] == [
        ("node", "ok"),
        ("launcher", "unknown"),
        ("migration", "broken"),
    ]
    assert links[-1]["message"] == (
        "The migration target pod virt-launcher-vm-target can never be scheduled: there is no node it may "
        f"run on other than {vm_chain.node_name}."
    )
    assert links[-1]["evidence"]["phase"] == "Scheduling"
    assert links[-1]["evidence"]["targetPodScheduling"]["conditions"] == [
        f"PodScheduled=False Unschedulable: {anti_affinity}"
    ]
