"""``virtctl expand`` against virt-api behind the real API server's aggregator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from localcluster.apiserver import ApiServer

from kubevirt.client import VIRTUAL_MACHINES, KubeClient
from kubevirt.client.resources import VIRTUAL_MACHINE_INSTANCETYPES
from kubevirt.virtctl.root import root
from kubevirt_testing.aggregated import AggregatedVirtApi


def virtctl(apiserver: ApiServer, *args: str) -> Any:
    return CliRunner().invoke(
        root, ["--kubeconfig", str(apiserver.kubeconfig), *args], catch_exceptions=False
    )


def _vm(name: str, memory: str | None = None) -> dict[str, Any]:
    domain: dict[str, Any] = {"devices": {}}
    if memory is not None:
        domain["memory"] = {"guest": memory}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {
            "runStrategy": "Halted",
            "instancetype": {"name": "medium", "kind": "VirtualMachineInstancetype"},
            "template": {"spec": {"domain": domain}},
        },
    }


def test_expand_a_stored_vm_and_a_file(
    aggregated_virt_api: AggregatedVirtApi,
    apiserver: ApiServer,
    kube: KubeClient,
    namespace: str,
    tmp_path: Path,
) -> None:
    kube.create(
        VIRTUAL_MACHINE_INSTANCETYPES,
        namespace,
        {
            "apiVersion": "instancetype.kubevirt.io/v1beta1",
            "kind": "VirtualMachineInstancetype",
            "metadata": {"name": "medium"},
            "spec": {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}},
        },
    )
    kube.create(VIRTUAL_MACHINES, namespace, _vm("stored"))

    stored = virtctl(apiserver, "expand", "--vm", "stored", "-n", namespace)
    assert stored.exit_code == 0, stored.stderr
    expanded = yaml.safe_load(stored.stdout)
    assert "instancetype" not in expanded["spec"]
    domain = expanded["spec"]["template"]["spec"]["domain"]
    assert (domain["cpu"]["sockets"], domain["memory"]["guest"]) == (2, "1Gi")

    manifest = tmp_path / "vm.yaml"
    manifest.write_text(yaml.safe_dump(_vm("from-file")))
    given = virtctl(apiserver, "expand", "--file", str(manifest), "-n", namespace, "-o", "json")
    assert given.exit_code == 0, given.stderr
    assert json.loads(given.stdout)["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "1Gi"}

    manifest.write_text(yaml.safe_dump(_vm("conflicting", memory="2Gi")))
    refused = virtctl(apiserver, "expand", "-f", str(manifest), "-n", namespace)
    assert (refused.exit_code, refused.stderr) == (
        1,
        f"error expanding VirtualMachine - conflicting in namespace - {namespace}: "
        "VM field(s) spec.template.spec.domain.memory conflicts with selected instance type\n",
    )
    absent = virtctl(apiserver, "expand", "--vm", "absent", "-n", namespace)
    assert (absent.exit_code, absent.stderr) == (
        1,
        f"error expanding VirtualMachine - absent in namespace - {namespace}: "
        'virtualmachine.kubevirt.io "absent" not found\n',
    )


def test_expand_checks_its_flags(apiserver: ApiServer) -> None:
    none = virtctl(apiserver, "expand")
    assert (none.exit_code, none.stderr) == (
        1,
        "error invalid arguments - VirtualMachine name or file must be provided\n",
    )
    bad = virtctl(apiserver, "expand", "--vm", "x", "-o", "test-format")
    assert (bad.exit_code, bad.stderr) == (1, "error not supported output format defined: test-format\n")
