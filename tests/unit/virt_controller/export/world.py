"""An in-memory cluster for the export controller's tests: FakeKubeApi, the caches the controller reads
(filled from the fake API by ``sync``), a settable clock, recorded events, a real export CA.

``run`` is one reconcile pass of one export, with the caches caught up before and after, so a test can
assert what each pass of KubeVirt's controller does.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    Resource,
)
from kubevirt.client.resources import (
    CONFIG_MAPS,
    INGRESSES,
    KUBEVIRTS,
    SECRETS,
    SERVICES,
    VIRTUAL_MACHINE_EXPORTS,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
    VOLUME_SNAPSHOTS,
)
from kubevirt.controller import RequeueAfter, Store, key_for
from kubevirt.service.certs import KeyPair, new_ca
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller.services.exporter_pod import render_exporter_pod
from kubevirt.virt_controller.watch.common import format_time
from kubevirt.virt_controller.watch.export.controller import ExportController, ExportStores, vm_expander
from kubevirt.virt_controller.watch.export.volumes import ApiDataVolumes
from kubevirt.virt_controller.watch.instancetype import InstancetypeStores, InstancetypeSync
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_testing.fake_kube_api import FakeKubeApi

from ..fakes import FakeClock, RecordedEvents

JSON = dict[str, Any]
NS = "default"
KUBEVIRT_NS = "kubevirt"
EXPORT = "export"
CLAIM = "claim"
VM = "vm"
IMAGE = "registry.example/virt-exportserver:test"
CA_BUNDLE = "-----BEGIN CERTIFICATE-----\nexport-ca\n-----END CERTIFICATE-----"


class FixedCA:
    def __init__(self, pair: KeyPair) -> None:
        self.pair = pair

    def current(self) -> KeyPair:
        return self.pair


class World:
    def __init__(self) -> None:
        self.api = FakeKubeApi()
        self.clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.events = RecordedEvents()
        self.queued: list[str] = []
        self.ca = FixedCA(new_ca("export.kubevirt.io", self.clock() - timedelta(hours=1), timedelta(days=7)))
        self.exports: Store[JSON] = Store()
        self.pvcs: Store[JSON] = Store()
        self.pods: Store[JSON] = Store()
        self.services: Store[JSON] = Store()
        self.vms: Store[VirtualMachine] = Store()
        self.vmis: Store[VirtualMachineInstance] = Store()
        self.snapshots: Store[JSON] = Store()
        self.contents: Store[JSON] = Store()
        self.volume_snapshot_store: Store[JSON] = Store()
        self.config_maps: Store[JSON] = Store()
        self.ingresses: Store[JSON] = Store()
        self.secrets: Store[JSON] = Store()
        self.kubevirts: Store[JSON] = Store()
        self.controller = ExportController(
            api=self.api,
            events=self.events,
            stores=ExportStores(
                exports=self.exports,
                pvcs=self.pvcs,
                pods=self.pods,
                services=self.services,
                vms=self.vms,
                vmis=self.vmis,
                snapshots=self.snapshots,
                contents=self.contents,
                volume_snapshots=lambda: self.volume_snapshot_store,
                config_maps=self.config_maps,
                ingresses=self.ingresses,
                secrets=self.secrets,
                kubevirts=self.kubevirts,
            ),
            kubevirt_namespace=KUBEVIRT_NS,
            render_pod=lambda export: render_exporter_pod(
                export, "virt-export", image=IMAGE, image_pull_policy="IfNotPresent"
            ),
            expand_vm=vm_expander(InstancetypeSync(api=self.api, stores=InstancetypeStores()), ClusterConfig),
            ca=self.ca,
            data_volumes=ApiDataVolumes(self.api),
            enqueue=self.queued.append,
            clock=self.clock,
        )
        self.add(KUBEVIRTS, {"metadata": {"name": "kubevirt", "namespace": KUBEVIRT_NS}, "spec": {}})
        self.add(
            CONFIG_MAPS,
            {
                "metadata": {"name": "kubevirt-export-ca", "namespace": KUBEVIRT_NS},
                "data": {"ca-bundle": CA_BUNDLE + "\n"},
            },
        )

    # Cluster state.
    def add(self, resource: Resource, obj: JSON) -> JSON:
        """Stores ``obj`` as created now by the fake clock."""
        obj = copy.deepcopy(obj)
        obj["metadata"].setdefault("namespace", NS)
        created = self.api.add(resource, obj)
        stored = self.api.objects[
            (resource.plural, created["metadata"]["namespace"], created["metadata"]["name"])
        ]
        stored["metadata"]["creationTimestamp"] = format_time(self.clock())
        return copy.deepcopy(stored)

    def edit(
        self, resource: Resource, name: str, change: Callable[[JSON], None], *, namespace: str = NS
    ) -> JSON:
        """Changes an object as another client would (its status included)."""
        stored = self.api.objects[(resource.plural, namespace, name)]
        change(stored)
        stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1000)
        return copy.deepcopy(stored)

    def get(self, resource: Resource, name: str, namespace: str = NS) -> JSON:
        return self.api.get(resource, namespace, name)

    def find(self, resource: Resource, name: str, namespace: str = NS) -> JSON | None:
        found = self.api.objects.get((resource.plural, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def sync(self) -> None:
        """The informers catch up with the API."""
        objects = self.api.objects_of
        self.exports.replace(objects(VIRTUAL_MACHINE_EXPORTS))
        self.pvcs.replace(objects(PERSISTENT_VOLUME_CLAIMS))
        self.pods.replace(objects(PODS))
        self.services.replace(objects(SERVICES))
        self.vms.replace(VirtualMachine.from_dict(vm) for vm in objects(VIRTUAL_MACHINES))
        self.vmis.replace(VirtualMachineInstance.from_dict(vmi) for vmi in objects(VIRTUAL_MACHINE_INSTANCES))
        self.snapshots.replace(objects(VIRTUAL_MACHINE_SNAPSHOTS))
        self.contents.replace(objects(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS))
        self.volume_snapshot_store.replace(objects(VOLUME_SNAPSHOTS))

        def in_kubevirt_ns(resource: Resource) -> list[JSON]:
            return [o for o in objects(resource) if o["metadata"]["namespace"] == KUBEVIRT_NS]

        self.config_maps.replace(in_kubevirt_ns(CONFIG_MAPS))
        self.ingresses.replace(in_kubevirt_ns(INGRESSES))
        self.secrets.replace(in_kubevirt_ns(SECRETS))
        self.kubevirts.replace(in_kubevirt_ns(KUBEVIRTS))

    def run(self, name: str = EXPORT) -> float | None:
        """One pass; the requeue it asked for (None when none)."""
        self.sync()
        try:
            self.controller.reconcile(key_for(NS, name))
        except RequeueAfter as requeue:
            return requeue.seconds
        finally:
            self.sync()
        return None

    # Reading what the controller made.
    def export(self, name: str = EXPORT) -> JSON:
        return self.get(VIRTUAL_MACHINE_EXPORTS, name)

    def status(self, name: str = EXPORT) -> JSON:
        return dict(self.export(name).get("status") or {})

    def conditions(self, name: str = EXPORT) -> dict[str, JSON]:
        return {c["type"]: c for c in self.status(name).get("conditions") or ()}

    def pod(self, name: str = EXPORT) -> JSON | None:
        return self.find(PODS, f"virt-export-{name}")

    def set_pod_phase(self, phase: str, *, ready: bool = True, name: str = EXPORT) -> None:
        def change(pod: JSON) -> None:
            pod["status"] = {"phase": phase, "containerStatuses": [{"name": "exporter", "ready": ready}]}

        self.edit(PODS, f"virt-export-{name}", change)

    def env(self, name: str = EXPORT) -> dict[str, str]:
        pod = self.pod(name)
        assert pod is not None
        return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0]["env"]}

    def objects(self, resource: Resource) -> list[JSON]:
        return self.api.objects_of(resource)


# Objects.
def export(
    source_kind: str = "PersistentVolumeClaim", source: str = CLAIM, name: str = EXPORT, **spec: Any
) -> JSON:
    groups = {
        "PersistentVolumeClaim": "",
        "VirtualMachine": "kubevirt.io",
        "VirtualMachineSnapshot": "snapshot.kubevirt.io",
    }
    return {
        "apiVersion": "export.kubevirt.io/v1beta1",
        "kind": "VirtualMachineExport",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"source": {"apiGroup": groups[source_kind], "kind": source_kind, "name": source}, **spec},
    }


def claim(
    name: str = CLAIM,
    *,
    block: bool = False,
    content_type: str | None = "kubevirt",
    phase: str = "Bound",
    owner: JSON | None = None,
) -> JSON:
    meta: JSON = {"name": name, "namespace": NS}
    if content_type is not None:
        meta["annotations"] = {"cdi.kubevirt.io/storage.contentType": content_type}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "metadata": meta,
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeMode": "Block" if block else "Filesystem",
        },
        "status": {"phase": phase},
    }


def pod_using(claim_name: str, name: str = "user") -> JSON:
    return {
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}],
        },
        "status": {"phase": "Running"},
    }


def vm(name: str = VM, volumes: list[JSON] | None = None, templates: list[JSON] | None = None) -> JSON:
    spec: JSON = {
        "runStrategy": "Halted",
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "domain": {"devices": {}, "resources": {"requests": {"memory": "128Mi"}}},
                "volumes": volumes
                if volumes is not None
                else [{"name": "root", "persistentVolumeClaim": {"claimName": CLAIM}}],
            },
        },
    }
    if templates is not None:
        spec["dataVolumeTemplates"] = templates
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": NS, "labels": {"team": "a"}},
        "spec": spec,
        "status": {"printableStatus": "Stopped"},
    }


def running_vmi(name: str = VM, phase: str = "Running") -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"domain": {"devices": {}}},
        "status": {"phase": phase},
    }


def certificate_of(secret: JSON) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
