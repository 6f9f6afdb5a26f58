"""``virtctl diagnose`` on the local cluster: each broken link made on purpose, the way a KubeVirt user
would meet it, and named by the walk; every answer within the 2 s budget.

One guest boots for the whole module (the healthy, paused and migration cases share it). The case with
no virt-handler moves virt-handler off the node through the KubeVirt CR's ``spec.workloads.nodePlacement``
and puts it back before it ends.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from localcluster import install, up
from localcluster.handle import Cluster
from localcluster.layout import REPO

from kubevirt.virtctl.root import root
from kubevirt_api.resource import Quantity

JSON = dict[str, Any]
ANSWER_BUDGET_SECONDS = 2.0
RUNNING_TIMEOUT = 180.0
VERDICT_TIMEOUT = 120.0
HANDLER_TIMEOUT = 300.0
# A launcher that crashes before the kubelet saw it run fails its VMI at once; one seen running is
# failed by virt-handler after its three-minute wait for the launcher's socket.
BACKOFF_TIMEOUT = 240.0
FAIL_FAST_ANNOTATION = "kubevirt.io/func-test-virt-launcher-fail-fast"
NO_HANDLER_LABEL = "kubevirt.io/diagnose-test-handler"
SCHEDULABLE_LABEL = "kubevirt.io/schedulable"
VM_MANIFEST = REPO / "examples" / "vm-test-guest-no-network.yaml"
VMI_MANIFEST = REPO / "examples" / "vmi-test-guest.yaml"
# Every answer's time, by case, for the summary printed at the end of the module.
TIMES: dict[str, list[float]] = {}


def _document(path: Path) -> JSON:
    (document,) = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    return document


def _vmi(name: str) -> JSON:
    vmi = copy.deepcopy(_document(VMI_MANIFEST))
    vmi["metadata"] = {"name": name}
    return vmi


def _vm(name: str, run_strategy: str = "Always") -> JSON:
    vm = copy.deepcopy(_document(VM_MANIFEST))
    vm["metadata"] = {"name": name}
    vm["spec"]["runStrategy"] = run_strategy
    vm["spec"]["template"]["metadata"] = {"labels": {"kubevirt.io/vm": name}}
    return vm


def _create(cluster: Cluster, namespace: str, obj: JSON) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(obj))


def diagnose(cluster: Cluster, case: str, kind: str, name: str, namespace: str) -> tuple[int, list[JSON]]:
    """One answer of ``virtctl diagnose KIND NAME -o json``, as the CLI gives it; fails beyond 2 s."""
    args = ["--kubeconfig", str(cluster.kubeconfig), "diagnose", kind, name, "-n", namespace, "-o", "json"]
    began = time.monotonic()
    result = CliRunner().invoke(root, args)
    elapsed = time.monotonic() - began
    TIMES.setdefault(case, []).append(elapsed)
    assert elapsed < ANSWER_BUDGET_SECONDS, f"diagnose {kind} {name} took {elapsed:.2f} s"
    assert result.exit_code in (0, 1), result.output
    links: list[JSON] = json.loads(result.stdout)
    return result.exit_code, links


def diagnose_until(
    cluster: Cluster,
    case: str,
    kind: str,
    name: str,
    namespace: str,
    done: Callable[[list[JSON]], bool],
    timeout: float = VERDICT_TIMEOUT,
) -> list[JSON]:
    """Asks again (each answer within budget) until ``done`` holds for the walk, as a user re-runs it
    while the cluster gets to the state under test."""
    deadline = time.monotonic() + timeout
    while True:
        _, links = diagnose(cluster, case, kind, name, namespace)
        if done(links):
            return links
        if time.monotonic() > deadline:
            raise AssertionError(f"diagnose {kind} {name}: not within {timeout:.0f} s; last answer {links}")
        time.sleep(1.0)


def _last(links: list[JSON]) -> JSON:
    return links[-1]


def _statuses(links: list[JSON]) -> list[tuple[str, str]]:
    return [(link["link"], link["status"]) for link in links]


def _broken_at(link_name: str, *fragments: str) -> Callable[[list[JSON]], bool]:
    def done(links: list[JSON]) -> bool:
        last = _last(links)
        return (
            last["link"] == link_name
            and last["status"] == "broken"
            and all(part in last["message"] for part in fragments)
        )

    return done


def _node_name(cluster: Cluster) -> str:
    nodes = cluster.kubectl_json("get", "nodes")["items"]
    assert isinstance(nodes, list)
    assert len(nodes) == 1, "these cases are written for a one-node cluster"
    return str(nodes[0]["metadata"]["name"])


def _delete_and_wait(cluster: Cluster, kind: str, name: str, namespace: str) -> None:
    cluster.kubectl("delete", kind, name, "-n", namespace, "--ignore-not-found", "--wait=false")
    cluster.wait_until(
        f"{kind} {namespace}/{name} and its VMI are gone",
        lambda: cluster.find(kind, name, namespace) is None and cluster.find("vmi", name, namespace) is None,
        timeout=RUNNING_TIMEOUT,
    )


Create = Callable[[JSON], None]


@pytest.fixture
def create(cluster: Cluster, namespace: str) -> Iterator[Create]:
    """Creates objects in the test's namespace. Afterwards each VM is halted and each object deleted, and
    the test waits until they and their VMIs are gone: nothing is left for virt-controller to finish
    after the last test removes KubeVirt."""
    made: list[JSON] = []

    def make(obj: JSON) -> None:
        _create(cluster, namespace, obj)
        made.append(obj)

    yield make
    for obj in reversed(made):
        name = str(obj["metadata"]["name"])
        kind = "vm" if obj["kind"] == "VirtualMachine" else "vmi"
        if kind == "vm":
            halt = json.dumps({"spec": {"runStrategy": "Halted"}})
            cluster.kubectl("patch", "vm", name, "-n", namespace, "--type=merge", "-p", halt, check=False)
        _delete_and_wait(cluster, kind, name, namespace)


@pytest.fixture(scope="module", autouse=True)
def answer_times() -> Iterator[None]:
    yield
    for case, times in TIMES.items():
        sys.stderr.write(
            f"diagnose {case}: {len(times)} answers, slowest {max(times):.2f} s, "
            f"median {sorted(times)[len(times) // 2]:.2f} s\n"
        )


# -- cases that need no guest to boot ------------------------------------------------------------------


def test_an_unschedulable_memory_request(
    cluster: Cluster, kubevirt: float, namespace: str, create: Create
) -> None:
    vmi = _vmi("huge")
    vmi["spec"]["domain"]["resources"]["requests"]["memory"] = "500Gi"
    create(vmi)
    links = diagnose_until(
        cluster, "unschedulable memory", "vmi", "huge", namespace, _broken_at("scheduling", "never")
    )
    assert _statuses(links) == [("vmi", "ok"), ("scheduling", "broken")]
    message = _last(links)["message"]
    assert message.startswith("The launcher pod virt-launcher-huge-"), message
    assert " can never be scheduled: memory " in message
    assert "requested but no node offers more than" in message
    # The pod asks for the guest's 500Gi plus the launcher's overhead.
    shortfall = _last(links)["evidence"]["shortfall"]["memory"]
    assert Quantity(shortfall["requested"]) > Quantity("500Gi")
    assert Quantity(shortfall["largest"]) < Quantity("500Gi")


def test_a_containerdisk_image_that_cannot_be_pulled(
    cluster: Cluster, kubevirt: float, namespace: str, create: Create
) -> None:
    missing = "localhost/kubevirt/no-such-disk:devel"
    vmi = _vmi("nodisk")
    vmi["spec"]["volumes"][0]["containerDisk"]["image"] = missing
    create(vmi)
    links = diagnose_until(
        cluster,
        "missing image",
        "vmi",
        "nodisk",
        namespace,
        _broken_at("containers", missing, "cannot start"),
    )
    assert _statuses(links) == [("vmi", "ok"), ("scheduling", "ok"), ("containers", "broken")]
    message = _last(links)["message"]
    assert message.startswith(f"Container volumecontainerdisk-init (image {missing}) cannot start: "), message
    assert any(reason in message for reason in ("ErrImagePull", "ImagePullBackOff")), message


def test_a_vm_whose_vmi_admission_refuses(
    cluster: Cluster, kubevirt: float, namespace: str, create: Create
) -> None:
    # The VM's webhook accepts a template without memory (an instancetype could bring it); the VMI's
    # refuses the VMI the VM controller makes from it.
    vm = _vm("nomemory")
    del vm["spec"]["template"]["spec"]["domain"]["resources"]
    create(vm)
    links = diagnose_until(
        cluster, "admission refused", "vm", "nomemory", namespace, _broken_at("vmi", "Admission refused")
    )
    assert _statuses(links) == [("vm", "ok"), ("vmi", "broken")]
    assert _last(links)["message"].startswith(
        "Admission refused the VMI the VM tried to create: no memory requested, at least one of "
        "'spec.domain.memory.guest'"
    ), _last(links)["message"]


def test_a_vm_that_does_not_exist(cluster: Cluster, kubevirt: float, namespace: str) -> None:
    code, links = diagnose(cluster, "no such VM", "vm", "no-such-vm", namespace)
    assert code == 1
    assert links == [
        {
            "link": "vm",
            "status": "broken",
            "message": f"VirtualMachine {namespace}/no-such-vm does not exist.",
            "evidence": {},
        }
    ]


def test_a_vm_in_start_failure_backoff(
    cluster: Cluster, kubevirt: float, namespace: str, create: Create
) -> None:
    vm = _vm("crashing")
    vm["spec"]["template"]["metadata"]["annotations"] = {FAIL_FAST_ANNOTATION: ""}
    create(vm)
    links = diagnose_until(
        cluster,
        "start-failure backoff",
        "vm",
        "crashing",
        namespace,
        _broken_at("vm", "start-failure backoff"),
    )
    assert _statuses(links) == [("vm", "broken")]
    message = _last(links)["message"]
    assert message.startswith("The VM is in start-failure backoff (CrashLoopBackOff): "), message
    failure = _last(links)["evidence"]["startFailure"]
    assert failure["consecutiveFailCount"] >= 1
    assert f"(last VMI uid {failure['lastFailedVMIUID']})" in message


# -- one running guest: healthy, paused, then a migration with nowhere to go ----------------------------


@pytest.fixture(scope="module")
def vm_namespace(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    name = f"ft-diagnose-running-{hashlib.sha1(__file__.encode()).hexdigest()[:6]}-{os.getpid() % 10000}"
    cluster.fresh_namespace(name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture(scope="module")
def running_vm(
    cluster: Cluster, vm_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The test guest's VM, Running; deleted (and its VMI gone) after the module's last case."""
    manifest = tmp_path_factory.mktemp("diagnose") / "vm.yaml"
    manifest.write_text(yaml.safe_dump(_vm("guest", run_strategy="Halted")))
    name = up.start_vm(cluster, manifest, namespace=vm_namespace, timeout=RUNNING_TIMEOUT)
    yield name
    _delete_and_wait(cluster, "vm", name, vm_namespace)


def _all_ok(links: list[JSON]) -> bool:
    return all(link["status"] in ("ok", "skipped") for link in links) and len(links) == 7


def _ready(links: list[JSON]) -> bool:
    return _all_ok(links) and links[1]["message"].endswith(", Ready.")


def test_a_healthy_running_vm(cluster: Cluster, running_vm: str, vm_namespace: str) -> None:
    links = diagnose_until(cluster, "healthy", "vm", running_vm, vm_namespace, _ready)
    assert _statuses(links) == [
        ("vm", "ok"),
        ("vmi", "ok"),
        ("scheduling", "ok"),
        ("containers", "ok"),
        ("node", "ok"),
        ("launcher", "ok"),
        ("migration", "skipped"),
    ]
    by_link = {link["link"]: link for link in links}
    node = _node_name(cluster)
    assert by_link["vmi"]["message"] == f"phase Running on node {node}, Ready."
    assert by_link["node"]["message"].startswith(f"node {node}, virt-handler ready, heartbeat ")
    assert by_link["launcher"]["message"].startswith("Socket up, domain Running"), by_link["launcher"]
    code, _ = diagnose(cluster, "healthy", "vm", running_vm, vm_namespace)
    assert code == 0


def test_a_paused_vmi(cluster: Cluster, running_vm: str, vm_namespace: str) -> None:
    paused = up.virtctl(cluster, "pause", "vm", running_vm, "-n", vm_namespace)
    assert paused.returncode == 0, paused.stderr
    try:
        links = diagnose_until(
            cluster, "paused", "vmi", running_vm, vm_namespace, _broken_at("vmi", "paused")
        )
        assert _statuses(links) == [("vmi", "broken")]
        assert _last(links)["message"] == "The VMI is paused (PausedByUser); virtctl unpause resumes it."
    finally:
        resumed = up.virtctl(cluster, "unpause", "vm", running_vm, "-n", vm_namespace)
        assert resumed.returncode == 0, resumed.stderr
    diagnose_until(cluster, "paused", "vm", running_vm, vm_namespace, _all_ok)


def test_a_migration_with_no_second_node(cluster: Cluster, running_vm: str, vm_namespace: str) -> None:
    node = _node_name(cluster)
    migrated = up.virtctl(cluster, "migrate", running_vm, "-n", vm_namespace)
    assert migrated.returncode == 0, migrated.stderr
    try:
        links = diagnose_until(
            cluster,
            "migration without a second node",
            "vm",
            running_vm,
            vm_namespace,
            _broken_at("migration", "never be scheduled"),
        )
        assert _statuses(links)[-1] == ("migration", "broken")
        assert all(status == "ok" for _, status in _statuses(links)[:-1]), links
        message = _last(links)["message"]
        assert message.startswith("The migration target pod virt-launcher-guest-"), message
        assert message.endswith(f"can never be scheduled: there is no node it may run on other than {node}.")
    finally:
        cluster.kubectl("delete", "vmim", "--all", "-n", vm_namespace, "--wait=true", "--timeout=120s")
    diagnose_until(cluster, "migration without a second node", "vm", running_vm, vm_namespace, _all_ok)


# -- virt-handler kept off the node (last: it moves virt-handler and puts it back) ----------------------


def _handler_pods(cluster: Cluster) -> list[JSON]:
    pods = cluster.kubectl_json("get", "pods", "-n", install.NAMESPACE, "-l", "kubevirt.io=virt-handler")
    items = pods["items"]
    assert isinstance(items, list)
    return items


def _node_label(cluster: Cluster, node: str, label: str) -> str | None:
    found = cluster.find("node", node) or {}
    value = (found.get("metadata") or {}).get("labels", {}).get(label)
    return None if value is None else str(value)


def _place_handler(cluster: Cluster, placement: JSON | None) -> None:
    body = {"spec": {"workloads": {"nodePlacement": placement} if placement is not None else None}}
    cluster.kubectl(
        "patch", "kubevirt", install.CR_NAME, "-n", install.NAMESPACE, "--type=merge", "-p", json.dumps(body)
    )


def _handler_ready(cluster: Cluster) -> bool:
    found = cluster.find("daemonset", install.HANDLER, install.NAMESPACE) or {}
    status = found.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    return bool(
        desired >= 1
        and status.get("numberReady") == desired
        and status.get("updatedNumberScheduled") == desired
        and status.get("observedGeneration") == found.get("metadata", {}).get("generation")
    )


@pytest.fixture
def no_handler(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    """virt-handler kept off every node through the KubeVirt CR; yields the node. Afterwards the placement
    is removed and the installation is back: virt-handler ready, the node schedulable, KubeVirt Deployed."""
    node = _node_name(cluster)
    _place_handler(cluster, {"nodeSelector": {NO_HANDLER_LABEL: "true"}})
    try:
        cluster.wait_until(
            "no virt-handler pod left", lambda: _handler_pods(cluster) == [], timeout=HANDLER_TIMEOUT
        )
        cluster.wait_until(
            f"node {node} marked {SCHEDULABLE_LABEL}=false by the departing virt-handler",
            lambda: _node_label(cluster, node, SCHEDULABLE_LABEL) == "false",
            timeout=60,
        )
        yield node
    finally:
        _place_handler(cluster, None)
        cluster.wait_until(
            "virt-handler is back and ready", lambda: _handler_ready(cluster), timeout=HANDLER_TIMEOUT
        )
        cluster.wait_until(
            f"node {node} schedulable again",
            lambda: _node_label(cluster, node, SCHEDULABLE_LABEL) == "true",
            timeout=120,
        )
        install.wait_deployed(cluster, timeout=HANDLER_TIMEOUT, progress=lambda line: None)


def test_a_node_without_virt_handler(
    cluster: Cluster, no_handler: str, namespace: str, create: Create
) -> None:
    vmi = _vmi("stranded")
    vmi["spec"]["nodeSelector"] = {"kubernetes.io/hostname": no_handler}
    create(vmi)
    links = diagnose_until(
        cluster, "no virt-handler", "vmi", "stranded", namespace, _broken_at("scheduling", "virt-handler")
    )
    assert _statuses(links) == [("vmi", "ok"), ("scheduling", "broken")]
    # Once virt-handler has gone, its device plugins may have left the node too (tun 0): said first.
    assert "can never be scheduled: " in _last(links)["message"]
    assert _last(links)["message"].endswith(
        f"no node carries the nodeSelector {SCHEDULABLE_LABEL}=true "
        f"(no virt-handler pod runs on any node, and virt-handler is what marks a node "
        f"{SCHEDULABLE_LABEL}=true)."
    ), _last(links)["message"]
