"""``virtctl expose`` against a real kube-apiserver: the Service it creates, and its refusals."""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner
from localcluster.apiserver import ApiServer

from kubevirt.client import (
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    KubeClient,
)
from kubevirt.virtctl.expose import SERVICES
from kubevirt.virtctl.root import root


def vmi_spec(ports: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "domain": {
            "devices": {"interfaces": [{"name": "default", "masquerade": {}, "ports": ports}]},
            "resources": {"requests": {"memory": "128Mi"}},
        },
        "networks": [{"name": "default", "pod": {}}],
    }


def virtctl(apiserver: ApiServer, namespace: str, *args: str) -> Any:
    return CliRunner().invoke(
        root, ["--kubeconfig", str(apiserver.kubeconfig), "-n", namespace, "expose", *args]
    )


def test_expose_vmi_vm_and_replicaset(apiserver: ApiServer, kube: KubeClient, namespace: str) -> None:
    kube.create(
        VIRTUAL_MACHINE_INSTANCES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": "web"},
            "spec": vmi_spec([{"name": "http", "port": 80}, {"port": 53, "protocol": "UDP"}]),
        },
    )
    result = virtctl(apiserver, namespace, "vmi", "web", "--name", "web-all")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "Service web-all successfully created for vmi web"
    service = kube.get(SERVICES, namespace, "web-all")
    assert service["spec"]["selector"] == {"vm.kubevirt.io/name": "web"}
    assert [(p["name"], p["protocol"], p["port"]) for p in service["spec"]["ports"]] == [
        ("port-1", "TCP", 80),
        ("port-2", "UDP", 53),
    ]
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["clusterIP"]

    ssh = (
        "--name",
        "web-ssh",
        "--port",
        "2222",
        "--target-port",
        "22",
        "--type",
        "NodePort",
        "--port-name",
        "ssh",
    )
    result = virtctl(apiserver, namespace, "vmi", "web", *ssh)
    assert result.exit_code == 0, result.output
    (port,) = kube.get(SERVICES, namespace, "web-ssh")["spec"]["ports"]
    assert (port["name"], port["port"], port["targetPort"], port["protocol"]) == ("ssh", 2222, 22, "TCP")
    assert port["nodePort"] > 0

    kube.create(
        VIRTUAL_MACHINES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "db"},
            "spec": {"runStrategy": "Halted", "template": {"spec": vmi_spec([])}},
        },
    )
    result = virtctl(apiserver, namespace, "vm", "db", "--name", "db", "--port", "5432")
    assert result.exit_code == 0, result.output
    assert kube.get(SERVICES, namespace, "db")["spec"]["selector"] == {"vm.kubevirt.io/name": "db"}

    kube.create(
        VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstanceReplicaSet",
            "metadata": {"name": "fleet"},
            "spec": {
                "selector": {"matchLabels": {"app": "fleet"}},
                "template": {"metadata": {"labels": {"app": "fleet"}}, "spec": vmi_spec([{"port": 8080}])},
            },
        },
    )
    result = virtctl(apiserver, namespace, "vmirs", "fleet", "--name", "fleet")
    assert result.exit_code == 0, result.output
    service = kube.get(SERVICES, namespace, "fleet")["spec"]
    assert service["selector"] == {"app": "fleet"}
    assert service["ports"][0]["port"] == 8080


def test_refusals(apiserver: ApiServer, kube: KubeClient, namespace: str) -> None:
    kube.create(
        VIRTUAL_MACHINES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "noports"},
            "spec": {"runStrategy": "Halted", "template": {"spec": vmi_spec([])}},
        },
    )
    cases = [
        (("vm", "noports", "--name", "s"), "couldn't find port via --port flag or introspection"),
        (("vm", "missing", "--name", "s", "--port", "80"), "error fetching VirtualMachine"),
        (("vmpool", "p", "--name", "s", "--port", "80"), "unsupported resource type: vmpool"),
        (
            ("vm", "noports", "--name", "s", "--port", "80", "--type", "ExternalName"),
            "type: ExternalName not supported",
        ),
        (("vm", "noports", "--name", "s", "--port", "80", "--protocol", "SCTP"), "unknown protocol: SCTP"),
        (("vm", "noports", "--name", "s", "--port", "80", "--ip-family", "IPv5"), "unknown IPFamily/s: IPv5"),
    ]
    for args, message in cases:
        result = virtctl(apiserver, namespace, *args)
        assert result.exit_code == 1, (args, result.output)
        assert message in result.output
    assert kube.list(SERVICES, namespace)[0] == []
