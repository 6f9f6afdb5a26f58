"""What a KubeVirt user meets on the surface of an installed KubeVirt: an export of a claim that does not
exist says so, every component reports a KubeVirt CR change on ``/healthz``, the CirrOS- and Alpine-compatible
guests boot and take KubeVirt's scripted console logins through virt-api, a second console connection ends
the first, and a normal start warns about nothing.

The two guests boot once for the module (one VM each, from examples/) and serve every test that needs a
running VM.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from localcluster import install
from localcluster.handle import Cluster
from localcluster.install import CR_NAME
from localcluster.vmis import wait_vmi_phase

from kubevirt.client import KubeClient
from kubevirt.virtctl.console import connect_console
from kubevirt.virtctl.streams import StreamEndedError, copy_from_stream
from kubevirt_testing.guest_console import (
    Expecter,
    login_to_alpine,
    login_to_cirros,
    run,
    virt_api_console,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CIRROS_VM = "vm-test-guest-cirros-compatible"
ALPINE_VM = "vm-test-guest-alpine-compatible"
KUBEVIRT_NAMESPACE = "kubevirt"
RUNNING_TIMEOUT = 180.0
CONFIG_PROPAGATION_BUDGET = 10.0


@pytest.fixture(scope="module")
def guest_namespace(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    """A namespace for the module's VMs (the per-test ``namespace`` ends with each test)."""
    with cluster.vm_namespace(f"ft-surface-guests-{os.getpid() % 10000}") as name:
        yield name


def _seconds_to_running(vmi: dict[str, Any]) -> float:
    """From the VMI's creation to its Running phase, by the cluster's own (whole-second) stamps."""
    transitions = vmi["status"]["phaseTransitionTimestamps"]
    running = next(t["phaseTransitionTimestamp"] for t in transitions if t["phase"] == "Running")
    return (_timestamp(running) - _timestamp(vmi["metadata"]["creationTimestamp"])).total_seconds()


def _timestamp(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def running_guests(cluster: Cluster, guest_namespace: str) -> dict[str, float]:
    """Both compatible guests' VMs created from examples/ with runStrategy Always and Running; returns the
    seconds each VMI took from creation to Running."""
    for name in (CIRROS_VM, ALPINE_VM):
        vm = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
        vm["spec"]["runStrategy"] = "Always"
        # Pod networking inside real launcher pods is not there yet on the local cluster (as for hack/up's
        # example): the guests run without a NIC, which leaves their boot and console as they are.
        vm["spec"]["template"]["spec"]["domain"]["devices"]["autoattachPodInterface"] = False
        cluster.kubectl("create", "-n", guest_namespace, "-f", "-", stdin=json.dumps(vm))
    took: dict[str, float] = {}
    deadline = time.monotonic() + RUNNING_TIMEOUT  # both boot at once: one budget for the two
    for name in (CIRROS_VM, ALPINE_VM):
        try:
            vmi = wait_vmi_phase(cluster, name, guest_namespace, timeout=deadline - time.monotonic())
        except AssertionError as error:
            raise AssertionError(f"{error}\n{_diagnosis(cluster, guest_namespace)}") from error
        took[name] = _seconds_to_running(vmi)
    print(f"created to Running: {took}")
    return took


def _diagnosis(cluster: Cluster, namespace: str) -> str:
    """What explains a guest that did not start: virt-handler's and the launchers' last words."""
    handler = ["logs", "-n", KUBEVIRT_NAMESPACE, "-l", "kubevirt.io=virt-handler", "--tail=60"]
    launchers = ["logs", "-n", namespace, "-l", "kubevirt.io=virt-launcher", "-c", "compute", "--tail=40"]
    vmis = ["get", "vmi", "-n", namespace, "-o", "jsonpath={.items[*].status}"]
    parts = [cluster.kubectl(*args, check=False) for args in (handler, launchers, vmis)]
    return "\n----\n".join((part.stdout + part.stderr)[-6000:] for part in parts)


def _console(cluster: Cluster, namespace: str, name: str) -> Expecter:
    return virt_api_console(str(cluster.kubeconfig), namespace, name)


def test_cirros_compatible_guest_takes_the_cirros_login(
    cluster: Cluster, guest_namespace: str, running_guests: dict[str, float]
) -> None:
    expecter = _console(cluster, guest_namespace, CIRROS_VM)
    try:
        login_to_cirros(expecter, CIRROS_VM)  # the hostname KubeVirt hands out: the VMI's name
        assert run(expecter, "sudo id -un") == "root"
        assert "hello from cloud-init" in _serial_log(cluster, guest_namespace, CIRROS_VM)
    finally:
        expecter.stream.close()


def test_alpine_compatible_guest_takes_the_alpine_login(
    cluster: Cluster, guest_namespace: str, running_guests: dict[str, float]
) -> None:
    expecter = _console(cluster, guest_namespace, ALPINE_VM)
    try:
        login_to_alpine(expecter, ALPINE_VM)
        assert run(expecter, "hostname") == ALPINE_VM
    finally:
        expecter.stream.close()


def test_a_second_console_connection_ends_the_first_abruptly(
    cluster: Cluster, guest_namespace: str, running_guests: dict[str, float]
) -> None:
    """KubeVirt's conformance spec: the older stream ends with an error ("unexpected EOF"), which a client
    reads only from a dropped connection; a close frame would look like the end of input."""
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    first = connect_console(client, guest_namespace, ALPINE_VM, 60)
    try:
        second = _console(cluster, guest_namespace, ALPINE_VM)
        try:
            second.send("\n")
            second.expect("login:|# ", timeout=60)
        finally:
            second.stream.close()
        first.settimeout(30)  # a stream still open past this fails the test with a timeout
        with pytest.raises(StreamEndedError) as ended:
            copy_from_stream(first, lambda _data: None)
        assert ended.value.abnormal
    finally:
        first.close()


def _serial_log(cluster: Cluster, namespace: str, name: str) -> str:
    """The guest-console-log container of the VMI's launcher pod (what ``kubectl logs`` shows)."""
    selector = f"kubevirt.io/created-by={_uid(cluster, namespace, name)}"
    (pod,) = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", selector)["items"]  # type: ignore[misc]
    return cluster.kubectl("logs", "-n", namespace, pod["metadata"]["name"], "-c", "guest-console-log").stdout


def _uid(cluster: Cluster, namespace: str, name: str) -> str:
    vmi = cluster.find("vmi", name, namespace)
    assert vmi is not None
    return str(vmi["metadata"]["uid"])


def test_a_normal_start_emits_no_warning_event(
    cluster: Cluster, guest_namespace: str, running_guests: dict[str, float]
) -> None:
    events = cluster.kubectl_json("get", "events", "-n", guest_namespace)["items"]
    warnings = [
        f"{e['involvedObject']['kind']}/{e['involvedObject']['name']}: {e['reason']}: {e['message']}"  # type: ignore[index]
        for e in events  # type: ignore[union-attr]
        if e["type"] == "Warning"  # type: ignore[index]
    ]
    assert warnings == []
    kinds = {e["involvedObject"]["kind"] for e in events}  # type: ignore[index,union-attr]
    assert {"VirtualMachine", "VirtualMachineInstance", "Pod"} <= kinds  # the starts were reported


def test_an_export_of_a_missing_claim_waits_and_says_why(
    cluster: Cluster, guest_namespace: str, running_guests: dict[str, float]
) -> None:
    export = {
        "apiVersion": "export.kubevirt.io/v1beta1",
        "kind": "VirtualMachineExport",
        "metadata": {"name": "export"},
        "spec": {"source": {"apiGroup": "", "kind": "PersistentVolumeClaim", "name": "claim"}},
    }
    with install.feature_gates(cluster, "VMExport"):
        cluster.kubectl("create", "-n", guest_namespace, "-f", "-", stdin=json.dumps(export))
        try:

            def conditions() -> dict[str, dict[str, Any]]:
                found = cluster.find("virtualmachineexport", "export", guest_namespace) or {}
                listed = (found.get("status") or {}).get("conditions") or []
                return {c["type"]: c for c in listed}

            cluster.wait_until(
                "the export's PVCReady condition",
                lambda: conditions().get("PVCReady", {}).get("reason") == "PVCNotFound",
                timeout=30,
            )
            ready = conditions()["Ready"]
            assert (ready["status"], ready["reason"]) == ("False", "InUse")
            assert ready["message"] == f"pvc {guest_namespace}/claim not found"
            assert cluster.find("pod", "virt-export-export", guest_namespace) is None
        finally:
            cluster.kubectl("delete", "-n", guest_namespace, "virtualmachineexport", "export", check=False)


def _component_pods(cluster: Cluster) -> dict[str, str]:
    found = install.config_pods(cluster)
    assert set(found.values()) == set(install.CONFIG_COMPONENTS), f"component pods: {found}"
    return found


def test_every_component_reports_a_kubevirt_cr_change_on_healthz(cluster: Cluster, kubevirt: float) -> None:
    pods = _component_pods(cluster)
    cr = cluster.kubectl_json("get", "kubevirt", CR_NAME, "-n", KUBEVIRT_NAMESPACE)
    migrations = cr["spec"].get("configuration", {}).get("migrations", {})  # type: ignore[union-attr,index]
    before = migrations.get("parallelOutboundMigrationsPerNode")
    # A harmless change: how many migrations a node may send at once (none run here).
    changed = 3 if before != 3 else 4
    patch = {"spec": {"configuration": {"migrations": {"parallelOutboundMigrationsPerNode": changed}}}}
    try:
        patched = cluster.kubectl_json(
            "patch", "kubevirt", CR_NAME, "-n", KUBEVIRT_NAMESPACE, "--type=merge", "-p", json.dumps(patch)
        )
        version = int(patched["metadata"]["resourceVersion"])  # type: ignore[index]
        began = time.monotonic()
        reported: dict[str, Any] = {}

        def all_report_it() -> bool:
            reported.update(install.config_versions(cluster, pods))
            return all(install.runs_with(value, version) for value in reported.values())

        while not all_report_it():
            waited = time.monotonic() - began
            assert waited < CONFIG_PROPAGATION_BUDGET, f"{version} not reported in {waited:.0f} s: {reported}"
            time.sleep(0.5)
        print(f"every component reported resourceVersion {version} after {time.monotonic() - began:.1f} s")
    finally:
        restore: Any = {"parallelOutboundMigrationsPerNode": before}
        cluster.kubectl(
            "patch",
            "kubevirt",
            CR_NAME,
            "-n",
            KUBEVIRT_NAMESPACE,
            "--type=merge",
            "-p",
            json.dumps({"spec": {"configuration": {"migrations": restore}}}),
        )
