"""kubevirt_vm_info, the status timestamps, resources, disks and vNICs, read from cached VMs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_INSTANCETYPES,
)
from kubevirt.controller import Store
from kubevirt.instancetype.find import Getter
from kubevirt.monitoring.virt_controller.instancetypes import store_lookup
from kubevirt.monitoring.virt_controller.vmstats import VMStatsCollector
from kubevirt_api.core.v1.vm import VirtualMachine

Scrape = Callable[[Collector], list[tuple[str, dict[str, str], float]]]
JSON = dict[str, Any]

TIMESTAMP_GROUPS = ("starting", "running", "migrating", "non_running", "error")


def _vendor(name: str, namespace: str | None = None, spec: JSON | None = None) -> JSON:
    meta: JSON = {"name": name, "labels": {"instancetype.kubevirt.io/vendor": "kubevirt.io"}}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "spec": spec or {}}


@pytest.fixture
def lookup() -> Getter:
    instancetypes: Store[Any] = Store()
    instancetypes.upsert(_vendor("u1.small", "ns"))
    cluster_instancetypes: Store[Any] = Store()
    cluster_instancetypes.upsert(
        _vendor("ci-managed", spec={"cpu": {"guest": 2}, "memory": {"guest": "2048"}})
    )
    return store_lookup(
        {
            VIRTUAL_MACHINE_INSTANCETYPES.plural: instancetypes,
            VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES.plural: cluster_instancetypes,
            CONTROLLER_REVISIONS.plural: Store(),
        }
    )


def _vm(name: str = "vm1", *, template_spec: JSON | None = None, **sections: JSON) -> JSON:
    vm: JSON = {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"template": {"spec": template_spec or {"domain": {"devices": {}}}}},
        "status": {"printableStatus": "Running"},
    }
    for section, value in sections.items():
        vm[section] = {**vm[section], **value}
    return vm


def _collector(vms: Iterable[Any], *, pvcs: Iterable[JSON] = (), lookup: Getter | None = None) -> Collector:
    return VMStatsCollector(vms=lambda: list(vms), pvcs=lambda: list(pvcs), lookup=lookup)


def _only(scraped: list[tuple[str, dict[str, str], float]], name: str) -> list[tuple[dict[str, str], float]]:
    return [(labels, value) for sample, labels, value in scraped if sample == name]


def _by_source(scraped: list[tuple[str, dict[str, str], float]]) -> dict[tuple[str, ...], float]:
    found: dict[tuple[str, ...], float] = {}
    for sample, labels, value in scraped:
        if sample == "kubevirt_vm_resource_requests":
            found[("requests", labels["resource"], labels["unit"], labels["source"])] = value
        elif sample == "kubevirt_vm_resource_limits":
            found[("limits", labels["resource"], labels["unit"])] = value
    return found


def test_vm_info_labels(scrape: Scrape, lookup: Getter) -> None:
    vm = _vm(
        spec={
            "instancetype": {"kind": "virtualmachineinstancetype", "name": "u1.small"},
            "preference": {"kind": "VirtualMachineClusterPreference", "name": "fedora"},
            "template": {
                "metadata": {
                    "annotations": {"vm.kubevirt.io/os": "rhel9", "vm.kubevirt.io/workload": "server"}
                },
                "spec": {"domain": {"devices": {}, "machine": {"type": "q35"}}},
            },
        },
        metadata={"annotations": {"vm.kubevirt.io/flavor": "on the VM, not its template: ignored"}},
        status={"printableStatus": "ErrorUnschedulable"},
    )

    info = _only(scrape(_collector([vm], lookup=lookup)), "kubevirt_vm_info")

    assert info == [
        (
            {
                "name": "vm1",
                "namespace": "ns",
                "os": "rhel9",
                "workload": "server",
                "flavor": "",
                "machine_type": "q35",
                "instance_type": "u1.small",
                "preference": "<other>",  # not in the cache
                "status": "errorunschedulable",
                "status_group": "error",
            },
            1.0,
        )
    ]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("VirtualMachineClusterInstancetype", "ci-managed"),
        ("virtualmachineclusterinstancetype", "ci-managed"),
        ("", ""),  # an empty kind names nothing here, unlike in the VM controller
        ("virtualmachineclusterinstancetypes", ""),
    ],
)
def test_instance_type_kind_is_matched_in_any_case(
    scrape: Scrape, lookup: Getter, kind: str, expected: str
) -> None:
    vm = _vm(spec={"instancetype": {"kind": kind, "name": "ci-managed"}})

    [(labels, _)] = _only(scrape(_collector([vm], lookup=lookup)), "kubevirt_vm_info")

    assert labels["instance_type"] == expected


@pytest.mark.parametrize(
    ("printable", "group", "dated"),
    [
        ("Provisioning", "starting", "starting"),
        ("WaitingForVolumeBinding", "starting", "starting"),
        ("Running", "running", "running"),
        ("Migrating", "migrating", "migrating"),
        ("Stopped", "non_running", "non_running"),
        ("Terminating", "non_running", "non_running"),
        ("CrashLoopBackOff", "error", "error"),
        ("DataVolumeError", "error", "error"),
        ("WaitingForReceiver", "<unknown>", "error"),
    ],
)
def test_status_timestamps_date_only_the_current_group(
    scrape: Scrape, printable: str, group: str, dated: str
) -> None:
    vm = _vm(
        status={
            "printableStatus": printable,
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
                {"type": "Paused", "status": "False", "lastTransitionTime": "2024-05-01T10:05:00Z"},
                {"type": "LiveMigratable", "status": "True", "lastTransitionTime": "2024-05-01T11:00:00Z"},
                {"type": "Failure", "status": "False"},
            ],
        }
    )

    scraped = scrape(_collector([vm]))

    for timestamp_group in TIMESTAMP_GROUPS:
        name = f"kubevirt_vm_{timestamp_group}_status_last_transition_timestamp_seconds"
        value = 1714557900.0 if timestamp_group == dated else 0.0
        assert _only(scraped, name) == [({"name": "vm1", "namespace": "ns"}, value)]
    [(labels, _)] = _only(scraped, "kubevirt_vm_info")
    assert (labels["status"], labels["status_group"]) == (printable.lower(), group)


def test_without_status_conditions_the_current_group_reads_minus_one(scrape: Scrape) -> None:
    scraped = scrape(_collector([_vm()]))

    assert _only(scraped, "kubevirt_vm_running_status_last_transition_timestamp_seconds") == [
        ({"name": "vm1", "namespace": "ns"}, -1.0)
    ]


def test_creation_timestamp_when_set(scrape: Scrape) -> None:
    created = _vm(metadata={"name": "vm1", "namespace": "ns", "creationTimestamp": "2024-05-01T10:00:00Z"})

    scraped = scrape(_collector([created, _vm("vm2")]))

    assert _only(scraped, "kubevirt_vm_create_date_timestamp_seconds") == [
        ({"name": "vm1", "namespace": "ns"}, 1714557600.0)
    ]


def test_memory_and_cpu_requests_and_limits(scrape: Scrape) -> None:
    vm = _vm(
        template_spec={
            "domain": {
                "devices": {},
                "resources": {
                    "requests": {"memory": "1Gi", "cpu": "500m"},
                    "limits": {"memory": "2Gi", "cpu": "1"},
                },
                "memory": {"guest": "1024Mi", "hugepages": {"pageSize": "2Mi"}},
            }
        }
    )

    assert _by_source(scrape(_collector([vm]))) == {
        ("requests", "memory", "bytes", "domain"): 1073741824.0,
        ("requests", "memory", "bytes", "guest"): 1073741824.0,
        ("requests", "memory", "bytes", "hugepages"): 2097152.0,
        ("limits", "memory", "bytes"): 2147483648.0,
        ("requests", "cpu", "cores", "requests"): 0.5,
        ("limits", "cpu", "cores"): 1.0,
    }


def test_cpu_topology_from_the_domain_and_the_default_without_any(scrape: Scrape) -> None:
    topology = _vm(template_spec={"domain": {"devices": {}, "cpu": {"cores": 2, "threads": 4, "sockets": 1}}})

    assert _by_source(scrape(_collector([topology]))) == {
        ("requests", "cpu", "cores", "domain"): 2.0,
        ("requests", "cpu", "threads", "domain"): 4.0,
        ("requests", "cpu", "sockets", "domain"): 1.0,
    }
    assert _by_source(scrape(_collector([_vm()]))) == {
        ("requests", "cpu", "cores", "default"): 1.0,
        ("requests", "cpu", "threads", "default"): 1.0,
        ("requests", "cpu", "sockets", "default"): 1.0,
    }


def test_requests_come_from_the_instance_type_applied_to_the_template(scrape: Scrape, lookup: Getter) -> None:
    vm = _vm(spec={"instancetype": {"kind": "VirtualMachineClusterInstancetype", "name": "ci-managed"}})
    vm["spec"]["template"] = {}

    assert _by_source(scrape(_collector([vm], lookup=lookup))) == {
        ("requests", "memory", "bytes", "guest"): 2048.0,
        ("requests", "cpu", "cores", "domain"): 1.0,
        ("requests", "cpu", "threads", "domain"): 1.0,
        ("requests", "cpu", "sockets", "domain"): 2.0,
    }


def test_a_missing_instance_type_leaves_the_template_as_it_is(scrape: Scrape, lookup: Getter) -> None:
    vm = _vm(spec={"instancetype": {"kind": "VirtualMachineClusterInstancetype", "name": "gone"}})

    assert _by_source(scrape(_collector([vm], lookup=lookup))) == {
        ("requests", "cpu", "cores", "default"): 1.0,
        ("requests", "cpu", "threads", "default"): 1.0,
        ("requests", "cpu", "sockets", "default"): 1.0,
    }


def test_models_from_the_informer_read_like_their_json(scrape: Scrape, lookup: Getter) -> None:
    vm = _vm(
        spec={"instancetype": {"kind": "VirtualMachineClusterInstancetype", "name": "ci-managed"}},
        status={"printableStatus": "Stopped"},
    )

    from_model = scrape(_collector([VirtualMachine.from_dict(vm)], lookup=lookup))

    assert from_model == scrape(_collector([vm], lookup=lookup))
    assert _by_source(from_model)[("requests", "memory", "bytes", "guest")] == 2048.0


def _pvc(name: str, storage: str, mode: str | None = None) -> JSON:
    spec: JSON = {"resources": {"requests": {"storage": storage}}}
    if mode:
        spec["volumeMode"] = mode
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def test_disk_sizes_of_pvc_and_datavolume_disks(scrape: Scrape) -> None:
    vm = _vm(
        spec={
            "dataVolumeTemplates": [
                {"metadata": {"name": "other-dv"}, "spec": {"storage": {}}},
                {
                    "metadata": {"name": "root-dv"},
                    "spec": {"storage": {"resources": {"requests": {"storage": "30Gi"}}}},
                },
            ],
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [
                        {"name": "rootdisk", "dataVolume": {"name": "root-dv"}},
                        {"name": "datadisk", "persistentVolumeClaim": {"claimName": "data"}},
                        {"name": "missing", "persistentVolumeClaim": {"claimName": "not-cached"}},
                        {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config"}},
                    ],
                }
            },
        }
    )
    pvcs = [_pvc("root-dv", "32Gi", "Block"), _pvc("data", "1Gi"), _pvc("unused", "5Gi")]

    disks = _only(scrape(_collector([vm], pvcs=pvcs)), "kubevirt_vm_disk_allocated_size_bytes")

    def labels(pvc: str, mode: str, device: str) -> dict[str, str]:
        return {
            "name": "vm1",
            "namespace": "ns",
            "persistentvolumeclaim": pvc,
            "volume_mode": mode,
            "device": device,
        }

    assert disks == [
        (labels("root-dv", "Block", "rootdisk"), 30 * 2.0**30),  # the template's size wins
        (labels("data", "", "datadisk"), 2.0**30),
    ]


def test_vm_vnic_info_from_the_template(scrape: Scrape) -> None:
    vm = _vm(
        template_spec={
            "domain": {"devices": {"interfaces": [{"name": "default", "masquerade": {}, "model": "virtio"}]}},
            "networks": [{"name": "default", "pod": {}}],
        }
    )

    assert _only(scrape(_collector([vm])), "kubevirt_vm_vnic_info") == [
        (
            {
                "name": "vm1",
                "namespace": "ns",
                "vnic_name": "default",
                "binding_type": "core",
                "network": "pod networking",
                "binding_name": "masquerade",
                "model": "virtio",
            },
            1.0,
        )
    ]


def test_status_timestamps_keep_kubevirts_names_on_the_wire() -> None:
    registry = CollectorRegistry()
    registry.register(VMStatsCollector(vms=lambda: [_vm()], pvcs=list))

    text = generate_latest(registry).decode()

    name = "kubevirt_vm_running_status_last_transition_timestamp_seconds"
    assert f"# HELP {name} Virtual Machine last transition timestamp to running status.\n" in text
    assert f'{name}{{name="vm1",namespace="ns"}} -1.0\n' in text
    assert "_total" not in text
    assert "_created" not in text


def test_without_vms_nothing_is_exposed(scrape: Scrape) -> None:
    def never() -> list[JSON]:
        raise AssertionError("read without VMs")

    assert scrape(VMStatsCollector(vms=list, pvcs=never)) == []
