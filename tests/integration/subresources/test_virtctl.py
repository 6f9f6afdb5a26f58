"""virtctl's lifecycle commands against the real API server and virt-api behind the aggregator."""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner
from localcluster.apiserver import ApiServer

from kubevirt.client import (
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    KubeClient,
)
from kubevirt.virtctl.root import root
from kubevirt_testing.aggregated import AggregatedVirtApi, create_vm, create_vmi


def virtctl(apiserver: ApiServer, *args: str) -> Any:
    return CliRunner().invoke(
        root, ["--kubeconfig", str(apiserver.kubeconfig), *args], catch_exceptions=False
    )


def run_strategy(kube: KubeClient, namespace: str) -> str:
    return str(kube.get(VIRTUAL_MACHINES, namespace, "vm")["spec"]["runStrategy"])


def test_start_stop_and_their_refusals(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vm(kube, namespace, "vm", "Halted")
    dry = virtctl(apiserver, "start", "vm", "-n", namespace, "--dry-run")
    assert (dry.exit_code, dry.stdout, dry.stderr) == (0, "VM vm was scheduled to start\n", "")
    assert run_strategy(kube, namespace) == "Halted"
    started = virtctl(apiserver, "-n", namespace, "start", "vm")
    assert (started.exit_code, started.stdout, started.stderr) == (0, "VM vm was scheduled to start\n", "")
    assert run_strategy(kube, namespace) == "Always"
    again = virtctl(apiserver, "start", "vm", "--namespace", namespace)
    assert again.exit_code == 1
    assert again.stderr == (
        'Error starting VirtualMachine Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm": '
        "Always does not support manual start requests\n"
    )
    stopped = virtctl(apiserver, "stop", "vm", "-n", namespace)
    assert (stopped.exit_code, stopped.stdout, stopped.stderr) == (0, "VM vm was scheduled to stop\n", "")
    assert run_strategy(kube, namespace) == "Halted"


def test_force_and_grace_period_go_together(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, namespace: str
) -> None:
    for command in ("stop", "restart"):
        alone = virtctl(apiserver, command, "vm", "-n", namespace, "--force")
        assert (alone.exit_code, alone.stderr) == (1, "Must both use --force=true and set --grace-period.\n")


def test_restart_and_migrate_without_a_vmi(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vm(kube, namespace, "vm", "Always")
    restarted = virtctl(apiserver, "restart", "vm", "-n", namespace)
    assert restarted.exit_code == 1
    assert restarted.stderr.endswith('"vm": VM is not running: Halted\n')
    migrated = virtctl(apiserver, "migrate", "vm", "-n", namespace)
    assert migrated.stderr == (
        'Error migrating VirtualMachine virtualmachineinstance.kubevirt.io "vm" not found\n'
    )
    create_vmi(kube, namespace, "vm", {"phase": "Running", "nodeName": "node01"})
    migrated = virtctl(apiserver, "migrate", "vm", "-n", namespace, "--addedNodeSelector", "zone=b")
    assert (migrated.exit_code, migrated.stdout, migrated.stderr) == (
        0,
        "VM vm was scheduled to migrate\n",
        "",
    )
    [migration] = kube.list(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace)[0]
    assert migration["spec"] == {"vmiName": "vm", "addedNodeSelector": {"zone": "b"}}
    restarted = virtctl(apiserver, "restart", "vm", "-n", namespace)
    assert (restarted.exit_code, restarted.stdout, restarted.stderr) == (
        0,
        "VM vm was scheduled to restart\n",
        "",
    )
    requests = kube.get(VIRTUAL_MACHINES, namespace, "vm")["status"]["stateChangeRequests"]
    assert [r["action"] for r in requests] == ["Stop", "Start"]


def test_pause_unpause_and_soft_reboot_reach_the_checks(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    created = create_vmi(kube, namespace, "vmi", {"phase": "Scheduled", "nodeName": "node01"})
    paused = virtctl(apiserver, "pause", "vmi", "vmi", "-n", namespace)
    assert paused.exit_code == 1
    assert paused.stderr == (
        "Error pausing VirtualMachineInstance vmi: Operation cannot be fulfilled on "
        'virtualmachineinstance.kubevirt.io "vmi": VM is not running\n'
    )
    unpaused = virtctl(apiserver, "unpause", "VMI", "vmi", "-n", namespace)
    assert unpaused.stderr.endswith('"vmi": VMI is not running\n')
    created = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vmi")
    created["status"]["phase"] = "Running"
    kube.update(VIRTUAL_MACHINE_INSTANCES, namespace, created)
    rebooted = virtctl(apiserver, "soft-reboot", "vmi", "-n", namespace)
    assert (rebooted.exit_code, rebooted.stdout, rebooted.stderr) == (
        0,
        "VMI vmi was scheduled to soft-reboot\n",
        "",
    )
    url = f"/v1/namespaces/{namespace}/virtualmachineinstances/vmi/softreboot"
    assert aggregated_virt_api.handler.calls[-1] == ("PUT", url)
    created = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vmi")
    created["status"]["nodeName"] = "node02"
    kube.update(VIRTUAL_MACHINE_INSTANCES, namespace, created)
    elsewhere = virtctl(apiserver, "pause", "vmi", "vmi", "-n", namespace)
    assert elsewhere.stderr == (
        "Error pausing VirtualMachineInstance vmi: No virt-handler on node node02 found\n"
    )
    missing_vm = virtctl(apiserver, "pause", "vm", "nothing", "-n", namespace)
    assert missing_vm.stderr.startswith("Error getting VirtualMachine nothing: ")


def test_a_forced_stop_sends_its_grace_period(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vm(kube, namespace, "vm", "Halted")
    created = create_vmi(kube, namespace, "vm", {"phase": "Running"}, terminationGracePeriodSeconds=30)
    plain = virtctl(apiserver, "stop", "vm", "-n", namespace)
    assert plain.stderr.endswith("Halted only supports manual stop requests with a shorter graceperiod\n")
    forced = virtctl(apiserver, "stop", "vm", "-n", namespace, "--force", "--grace-period", "0")
    assert (forced.exit_code, forced.stdout, forced.stderr) == (0, "VM vm was scheduled to stop\n", "")
    assert kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm")["spec"]["terminationGracePeriodSeconds"] == 0
    requests = kube.get(VIRTUAL_MACHINES, namespace, "vm")["status"]["stateChangeRequests"]
    assert requests == [{"action": "Stop", "uid": created["metadata"]["uid"]}]


def test_migrate_cancel_deletes_the_running_migration(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    none = virtctl(apiserver, "migrate-cancel", "vm", "-n", namespace)
    assert (none.exit_code, none.stderr) == (1, "Found no migration to cancel for vm\n")
    for name, phase in (("done", "Succeeded"), ("running", "Running")):
        migration = {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstanceMigration",
            "metadata": {"name": name, "namespace": namespace, "labels": {"kubevirt.io/vmi-name": "vm"}},
            "spec": {"vmiName": "vm"},
        }
        created = kube.create(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, migration)
        created["status"] = {"phase": phase}
        kube.update_status(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, created)
    cancelled = virtctl(apiserver, "migrate-cancel", "vm", "-n", namespace)
    assert (cancelled.exit_code, cancelled.stdout, cancelled.stderr) == (
        0,
        "VM vm was scheduled to migrate-cancel\n",
        "",
    )
    left = kube.list(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace)[0]
    assert [m["metadata"]["name"] for m in left] == ["done"]


def test_guest_agent_reads_and_version(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vmi(kube, namespace, "vmi")
    info = virtctl(apiserver, "guestosinfo", "vmi", "-n", namespace)
    assert (info.exit_code, info.stderr) == (
        1,
        "Error getting guestosinfo of VirtualMachineInstance vmi, Operation cannot be fulfilled on "
        'virtualmachineinstance.kubevirt.io "vmi": VMI is not running\n',
    )
    users = virtctl(apiserver, "userlist", "absent", "-n", namespace)
    assert users.stderr == (
        "Error listing users of VirtualMachineInstance absent, "
        'virtualmachineinstance.kubevirt.io "absent" not found\n'
    )
    version = virtctl(apiserver, "version")
    assert version.exit_code == 0
    client_line, server_line = version.stdout.splitlines()
    assert client_line.startswith('Client Version: version.Info{GitVersion:"v')
    assert server_line.startswith('Server Version: version.Info{GitVersion:"v')
