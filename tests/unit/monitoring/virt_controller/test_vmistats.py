"""kubevirt_vmi_info and the other per-VMI families, read from cached VMIs as KubeVirt derives them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from kubevirt.client.resources import (
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
    VIRTUAL_MACHINE_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
)
from kubevirt.controller import Store
from kubevirt.instancetype.find import Getter
from kubevirt.monitoring.virt_controller.instancetypes import store_lookup
from kubevirt.monitoring.virt_controller.vmistats import VMIStatsCollector
from kubevirt_api.core.v1.vmi import VirtualMachineInstance

Scrape = Callable[[Collector], list[tuple[str, dict[str, str], float]]]
JSON = dict[str, Any]


def _instancetype_object(name: str, vendor: str | None, namespace: str | None = None) -> JSON:
    meta: JSON = {"name": name, "labels": {"instancetype.kubevirt.io/vendor": vendor} if vendor else {}}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "spec": {}}


@pytest.fixture
def lookup() -> Getter:
    stores: dict[str, Store[Any]] = {
        resource.plural: Store()
        for resource in (
            VIRTUAL_MACHINE_INSTANCETYPES,
            VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
            VIRTUAL_MACHINE_PREFERENCES,
            VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
        )
    }
    stores[VIRTUAL_MACHINE_INSTANCETYPES.plural].upsert(_instancetype_object("u1.small", "redhat.com", "ns"))
    stores[VIRTUAL_MACHINE_INSTANCETYPES.plural].upsert(_instancetype_object("mine", "some-user", "ns"))
    stores[VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES.plural].upsert(
        _instancetype_object("cx1.large", "kubevirt.io")
    )
    stores[VIRTUAL_MACHINE_CLUSTER_PREFERENCES.plural].upsert(_instancetype_object("fedora", "kubevirt.io"))
    stores[VIRTUAL_MACHINE_CLUSTER_PREFERENCES.plural].upsert(_instancetype_object("custom", None))
    return store_lookup(stores)


def _vmi(name: str = "vm1", **overrides: Any) -> JSON:
    vmi: JSON = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid"},
        "spec": {"domain": {"devices": {}}},
        "status": {"phase": "Running", "nodeName": "node01"},
    }
    for section, value in overrides.items():
        vmi[section] = {**vmi[section], **value}
    return vmi


def _pod(name: str, owner: str, node: str, phase: str = "Running", namespace: str = "ns") -> JSON:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"kubevirt.io/created-by": owner}},
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }


def _collector(
    vmis: Iterable[Any],
    *,
    pods: Iterable[JSON] = (),
    migrations: Iterable[JSON] = (),
    lookup: Getter | None = None,
    eviction_strategy: str | None = None,
) -> VMIStatsCollector:
    return VMIStatsCollector(
        vmis=lambda: list(vmis),
        pods=lambda: list(pods),
        migrations=lambda: list(migrations),
        lookup=lookup,
        eviction_strategy=lambda: eviction_strategy,
    )


def _only(scraped: list[tuple[str, dict[str, str], float]], name: str) -> list[tuple[dict[str, str], float]]:
    return [(labels, value) for sample, labels, value in scraped if sample == name]


def test_vmi_info_carries_every_label_kubevirt_derives(scrape: Scrape, lookup: Getter) -> None:
    vmi = _vmi(
        metadata={
            "annotations": {
                "vm.kubevirt.io/os": "fedora",
                "vm.kubevirt.io/workload": "server",
                "vm.kubevirt.io/flavor": "small",
                "kubevirt.io/instancetype-name": "u1.small",
                "kubevirt.io/cluster-preference-name": "fedora",
            },
            "labels": {"kubevirt.io/outdatedLauncherImage": ""},
        },
        status={
            "phase": "Running",
            "nodeName": "node01",
            "machine": {"type": "pc-q35-rhel9.4.0"},
            "guestOSInfo": {
                "kernelRelease": "6.5.6-300.fc39.x86_64",
                "machine": "x86_64",
                "name": "Fedora Linux",
                "versionId": "39",
                "id": "fedora",
            },
        },
    )
    pods = [
        _pod("virt-launcher-vm1-old", "vm1-uid", "node02"),  # the source of an earlier migration
        _pod("virt-launcher-vm1-done", "vm1-uid", "node01", phase="Succeeded"),
        _pod("virt-launcher-vm1-abcde", "vm1-uid", "node01"),
        _pod("virt-launcher-vm1-other", "vm1-uid", "node01", namespace="elsewhere"),
    ]

    info = _only(scrape(_collector([vmi], pods=pods, lookup=lookup)), "kubevirt_vmi_info")

    assert info == [
        (
            {
                "node": "node01",
                "namespace": "ns",
                "name": "vm1",
                "phase": "running",
                "os": "fedora",
                "workload": "server",
                "flavor": "small",
                "instance_type": "u1.small",
                "preference": "fedora",
                "guest_os_kernel_release": "6.5.6-300.fc39.x86_64",
                "guest_os_machine": "pc-q35-rhel9.4.0",
                "guest_os_arch": "x86_64",
                "guest_os_name": "Fedora Linux",
                "guest_os_version_id": "39",
                "evictable": "true",
                "outdated": "true",
                "vmi_pod": "virt-launcher-vm1-abcde",
            },
            1.0,
        )
    ]


def test_a_bare_vmi_has_empty_labels(scrape: Scrape) -> None:
    vmi = _vmi(status={"phase": "Scheduling", "nodeName": ""})

    [(labels, _)] = _only(scrape(_collector([vmi])), "kubevirt_vmi_info")

    assert labels == {
        "node": "",
        "namespace": "ns",
        "name": "vm1",
        "phase": "scheduling",
        "os": "",
        "workload": "",
        "flavor": "",
        "instance_type": "",
        "preference": "",
        "guest_os_kernel_release": "",
        "guest_os_machine": "",
        "guest_os_arch": "",
        "guest_os_name": "",
        "guest_os_version_id": "",
        "evictable": "true",
        "outdated": "false",
        "vmi_pod": "",
    }


@pytest.mark.parametrize(
    ("annotation", "value", "label", "expected"),
    [
        ("kubevirt.io/instancetype-name", "u1.small", "instance_type", "u1.small"),
        ("kubevirt.io/instancetype-name", "mine", "instance_type", "<other>"),
        ("kubevirt.io/instancetype-name", "gone", "instance_type", "<other>"),
        ("kubevirt.io/cluster-instancetype-name", "cx1.large", "instance_type", "cx1.large"),
        ("kubevirt.io/cluster-preference-name", "fedora", "preference", "fedora"),
        ("kubevirt.io/cluster-preference-name", "custom", "preference", "<other>"),
        ("kubevirt.io/preference-name", "fedora", "preference", "<other>"),  # namespaced: not found
    ],
)
def test_instance_types_are_named_only_for_known_vendors(
    scrape: Scrape, lookup: Getter, annotation: str, value: str, label: str, expected: str
) -> None:
    vmi = _vmi(metadata={"annotations": {annotation: value}})

    [(labels, _)] = _only(scrape(_collector([vmi], lookup=lookup)), "kubevirt_vmi_info")

    assert labels[label] == expected


@pytest.mark.parametrize(
    ("own", "cluster", "migratable", "non_evictable"),
    [
        ("LiveMigrate", None, "False", 1.0),
        ("LiveMigrate", None, "Unknown", 0.0),  # only a missing or False condition blocks
        ("LiveMigrate", None, None, 1.0),
        ("LiveMigrate", None, "True", 0.0),
        (None, "LiveMigrate", "False", 1.0),
        (None, "LiveMigrate", None, 1.0),
        ("None", "LiveMigrate", "False", 0.0),
        ("LiveMigrateIfPossible", None, "False", 0.0),
        ("LiveMigrateIfPossible", None, None, 0.0),
        (None, None, "False", 0.0),
        ("External", None, "False", 0.0),
    ],
)
def test_non_evictable_follows_the_eviction_strategy_and_migratability(
    scrape: Scrape, own: str | None, cluster: str | None, migratable: str | None, non_evictable: float
) -> None:
    spec: JSON = {"evictionStrategy": own} if own else {}
    status: JSON = {"phase": "Running", "nodeName": "node01"}
    if migratable is not None:
        status["conditions"] = [{"type": "LiveMigratable", "status": migratable}]
    vmi = _vmi(spec=spec, status=status)

    scraped = scrape(_collector([vmi], eviction_strategy=cluster))

    labels = {"node": "node01", "namespace": "ns", "name": "vm1"}
    assert _only(scraped, "kubevirt_vmi_non_evictable") == [(labels, non_evictable)]
    [(info, _)] = _only(scraped, "kubevirt_vmi_info")
    assert info["evictable"] == ("false" if non_evictable else "true")


def test_addresses_of_each_interface_with_something_to_tell_it_apart(scrape: Scrape) -> None:
    vmi = _vmi(
        status={
            "phase": "Running",
            "nodeName": "node01",
            "interfaces": [
                {"name": "default", "interfaceName": "eth0", "ipAddress": "10.244.0.12"},
                {"interfaceName": "br-int"},
                {"mac": "02:00:00:00:00:01"},  # no name, interface name or address: left out
            ],
        }
    )

    addresses = _only(scrape(_collector([vmi])), "kubevirt_vmi_status_addresses")

    base = {"node": "node01", "namespace": "ns", "name": "vm1"}
    assert addresses == [
        (
            {**base, "vnic_name": "default", "interface_name": "eth0", "address": "10.244.0.12"}
            | {"type": "ExternalInterface"},
            1.0,
        ),
        (
            {**base, "vnic_name": "", "interface_name": "br-int", "address": "", "type": "SystemInterface"},
            1.0,
        ),
    ]


def test_migration_start_and_end_times_name_the_migration(scrape: Scrape) -> None:
    migrations = [
        {"metadata": {"name": "other", "namespace": "ns", "uid": "m0"}},
        {"metadata": {"name": "evacuation-abc", "namespace": "ns", "uid": "m1"}},
    ]
    finished = _vmi(
        status={
            "phase": "Running",
            "nodeName": "node02",
            "migrationState": {
                "migrationUid": "m1",
                "startTimestamp": "2024-05-01T10:00:00Z",
                "endTimestamp": "2024-05-01T10:00:42Z",
                "completed": True,
                "failed": True,
            },
        }
    )
    running = _vmi(
        "vm2",
        status={
            "phase": "Running",
            "nodeName": "node01",
            "migrationState": {"migrationUid": "gone", "startTimestamp": "2024-05-01T11:00:00Z"},
        },
    )
    unfinished = _vmi(
        "vm3",
        status={
            "phase": "Running",
            "nodeName": "node01",
            "migrationState": {"migrationUid": "m0", "endTimestamp": "2024-05-01T12:00:00Z"},
        },
    )

    scraped = scrape(_collector([finished, running, unfinished], migrations=migrations))

    assert _only(scraped, "kubevirt_vmi_migration_start_time_seconds") == [
        (
            {"node": "node02", "namespace": "ns", "name": "vm1", "migration_name": "evacuation-abc"},
            1714557600.0,
        ),
        ({"node": "node01", "namespace": "ns", "name": "vm2", "migration_name": ""}, 1714561200.0),
    ]
    assert _only(scraped, "kubevirt_vmi_migration_end_time_seconds") == [
        (
            {"node": "node02", "namespace": "ns", "name": "vm1", "migration_name": "evacuation-abc"}
            | {"status": "failed"},
            1714557642.0,
        ),
        (
            {"node": "node01", "namespace": "ns", "name": "vm3", "migration_name": "other", "status": ""},
            1714564800.0,
        ),
    ]


def test_vnic_info_for_each_interface_on_a_known_network(scrape: Scrape) -> None:
    vmi = _vmi(
        spec={
            "domain": {
                "devices": {
                    "interfaces": [
                        {"name": "default", "masquerade": {}},
                        {"name": "blue", "bridge": {}, "model": "e1000e"},
                        {"name": "fast", "sriov": {}},
                        {"name": "passt", "binding": {"name": "passt"}},
                        {"name": "orphan", "bridge": {}},
                    ]
                }
            },
            "networks": [
                {"name": "default", "pod": {}},
                {"name": "blue", "multus": {"networkName": "ns/blue-net"}},
                {"name": "fast", "multus": {"networkName": "sriov-net"}},
                {"name": "passt", "pod": {}},
            ],
        }
    )

    vnics = _only(scrape(_collector([vmi])), "kubevirt_vmi_vnic_info")

    def labels(vnic: str, kind: str, network: str, binding: str, model: str = "<none>") -> dict[str, str]:
        return {
            "name": "vm1",
            "namespace": "ns",
            "vnic_name": vnic,
            "binding_type": kind,
            "network": network,
            "binding_name": binding,
            "model": model,
        }

    assert vnics == [
        (labels("default", "core", "pod networking", "masquerade"), 1.0),
        (labels("blue", "core", "ns/blue-net", "bridge", "e1000e"), 1.0),
        (labels("fast", "core", "sriov-net", "sriov"), 1.0),
        (labels("passt", "plugin", "pod networking", "passt"), 1.0),
    ]


def test_ephemeral_hotplug_volume_only_when_annotated(scrape: Scrape) -> None:
    annotated = _vmi(metadata={"annotations": {"kubevirt.io/ephemeral-hotplug-volumes": "hp-disk"}})

    scraped = scrape(_collector([annotated, _vmi("vm2")]))

    assert _only(scraped, "kubevirt_vmi_contains_ephemeral_hotplug_volume") == [
        ({"namespace": "ns", "name": "vm1", "volume_name": "hp-disk"}, 1.0)
    ]


def test_models_from_the_informer_read_like_their_json(scrape: Scrape, lookup: Getter) -> None:
    vmi = _vmi(
        metadata={"annotations": {"kubevirt.io/cluster-instancetype-name": "cx1.large"}},
        status={"phase": "Running", "nodeName": "node01", "guestOSInfo": {"name": "Fedora Linux"}},
    )

    from_model = scrape(_collector([VirtualMachineInstance.from_dict(vmi)], lookup=lookup))

    assert from_model == scrape(_collector([vmi], lookup=lookup))
    [(labels, _)] = _only(from_model, "kubevirt_vmi_info")
    assert (labels["instance_type"], labels["guest_os_name"]) == ("cx1.large", "Fedora Linux")


def test_without_vmis_nothing_is_exposed_and_nothing_else_is_read(scrape: Scrape) -> None:
    def never() -> list[JSON]:
        raise AssertionError("read without VMIs")

    collector = VMIStatsCollector(vmis=list, pods=never, migrations=never)

    assert scrape(collector) == []


def test_a_malformed_vmi_is_skipped_alone(scrape: Scrape) -> None:
    broken = _vmi("broken", status={"phase": "Running", "interfaces": "not a list"})

    names = {labels["name"] for _, labels, _ in scrape(_collector([broken, _vmi("vm2")]))}

    assert names == {"vm2"}


def test_registering_does_not_scrape_and_exposition_keeps_the_names() -> None:
    calls: list[str] = []

    def vmis() -> list[JSON]:
        calls.append("vmis")
        return [_vmi()]

    registry = CollectorRegistry()
    registry.register(VMIStatsCollector(vmis=vmis, pods=list, migrations=list))
    assert calls == []

    text = generate_latest(registry).decode()

    assert "# TYPE kubevirt_vmi_info gauge" in text
    assert 'kubevirt_vmi_non_evictable{name="vm1",namespace="ns",node="node01"} 0.0' in text
    assert "kubevirt_vmi_status_addresses" not in text  # no samples, no family
