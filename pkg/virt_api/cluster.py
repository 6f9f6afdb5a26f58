"""Cluster state for the admitters, read from the Kubernetes API (VMIs, migrations, pods, the snapshots
and VMs a restore names).

Lookups are plain GET/LIST calls on virt-api's one client, made while a review is being answered (the
server runs admitters off its event loop); failures become :class:`ClusterStateError` so the admitter
answers with the reason. VirtualMachineInstancePresets, read for every VMI created, come from an
informer's cache instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from urllib3.exceptions import HTTPError

from kubevirt.admission.migration import MIGRATION_SELECTOR_LABEL
from kubevirt.admission.state import ClusterStateError
from kubevirt.client import (
    KUBEVIRTS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ApiError,
    ConnectionFailedError,
    KubeClient,
    NotFoundError,
    Resource,
)
from kubevirt.client.kubeclient import PATCH_CONTENT_TYPES
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    DATA_SOURCES,
    DATA_VOLUMES,
    INSTANCETYPE_RESOURCES,
    VIRTUAL_MACHINE_INSTANCE_PRESETS,
    VIRTUAL_MACHINE_RESTORES,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
)
from kubevirt.virt_api.presets import PresetCache
from kubevirt_api.view import JSON

# Each lookup must fit well inside the API server's 10 s webhook timeout, so it is sent once: a refusal
# with the reason is better than an answer after the API server gave up waiting.
REQUEST_TIMEOUT = 3.0
# What ``inferFromVolume`` may name, by kind.
VOLUME_SOURCES: Final[Mapping[str, Resource]] = {
    resource.kind: resource for resource in (PERSISTENT_VOLUME_CLAIMS, DATA_VOLUMES, DATA_SOURCES)
}


class KubernetesClusterState:
    def __init__(self, client: KubeClient, presets: PresetCache | None = None) -> None:
        self._client = client
        self._presets = presets

    def _request(self, what: str, method: str, path: str, *, absent_ok: bool = False, **kwargs: Any) -> Any:
        """The decoded answer, ``None`` when it is not JSON (or, with ``absent_ok``, when the API server
        says the object does not exist); raises :class:`ClusterStateError`."""
        try:
            data = self._client.request(method, path, timeout=REQUEST_TIMEOUT, retry=False, **kwargs)
        except (ApiError, HTTPError) as err:
            if absent_ok and isinstance(err, NotFoundError):
                return None
            reason = err.message if isinstance(err, ConnectionFailedError) else str(err)
            raise ClusterStateError(f"cannot read {what}: {reason}") from None
        try:
            return json.loads(data)
        except ValueError:
            return None

    def _get(self, what: str, resource: Resource, namespace: str | None, name: str) -> JSON | None:
        """One object, or ``None`` when the API server says it does not exist."""
        found = self._request(what, "GET", resource.path(namespace, name), absent_ok=True)
        return found if isinstance(found, dict) else None

    def _list(
        self, what: str, resource: Resource, namespace: str | None, label_selector: str | None = None
    ) -> list[JSON]:
        """The items of a list; anything that is not an object is dropped."""
        query = {"labelSelector": label_selector} if label_selector else None
        listed = self._request(what, "GET", resource.path(namespace), query=query)
        items = listed.get("items") if isinstance(listed, dict) else None
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    def get_vmi(self, namespace: str, name: str) -> JSON | None:
        return self._get(
            f"VirtualMachineInstance {namespace}/{name}", VIRTUAL_MACHINE_INSTANCES, namespace, name
        )

    def list_migrations(self, namespace: str, vmi_name: str) -> list[JSON]:
        return self._list(
            f"migrations of {namespace}/{vmi_name}",
            VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
            namespace,
            f"{MIGRATION_SELECTOR_LABEL} in ({vmi_name})",
        )

    def list_vmi_presets(self, namespace: str) -> list[JSON]:
        cached = self._presets.in_namespace(namespace) if self._presets is not None else None
        if cached is not None:
            return cached
        # Before the informer's first list has landed its empty cache would silently leave the presets
        # out, so ask the API server as a review always did. That first list lands within milliseconds of
        # start-up, so only virt-api's first reviews (or all of them while the API server cannot be
        # listed, where this LIST then refuses with the reason) pay for it; waiting for the cache instead
        # would add that latency and a second time-out to every such review for no better answer.
        return self._list(
            f"VirtualMachineInstancePresets of {namespace}", VIRTUAL_MACHINE_INSTANCE_PRESETS, namespace
        )

    def get_pod(self, namespace: str, name: str) -> JSON | None:
        return self._get(f"pod {namespace}/{name}", PODS, namespace, name)

    def get_instancetype_object(self, kind: str, namespace: str, name: str) -> JSON | None:
        """An instance type or preference of one of the four ``instancetype.kubevirt.io`` kinds."""
        resource = INSTANCETYPE_RESOURCES[kind]
        if resource.namespaced:
            return self._get(f"{kind} {namespace}/{name}", resource, namespace, name)
        return self._get(f"{kind} {name}", resource, None, name)

    def get_controller_revision(self, namespace: str, name: str) -> JSON | None:
        """A ControllerRevision (a VM's stored instance type or preference)."""
        return self._get(f"ControllerRevision {namespace}/{name}", CONTROLLER_REVISIONS, namespace, name)

    def get_volume_source(self, kind: str, namespace: str, name: str) -> JSON | None:
        """A PVC, or a CDI DataVolume or DataSource, for ``inferFromVolume``."""
        return self._get(f"{kind} {namespace}/{name}", VOLUME_SOURCES[kind], namespace, name)

    def get_vm(self, namespace: str, name: str) -> JSON | None:
        return self._get(f"VirtualMachine {namespace}/{name}", VIRTUAL_MACHINES, namespace, name)

    def get_vm_snapshot(self, namespace: str, name: str) -> JSON | None:
        return self._get(
            f"VirtualMachineSnapshot {namespace}/{name}", VIRTUAL_MACHINE_SNAPSHOTS, namespace, name
        )

    def get_vm_snapshot_content(self, namespace: str, name: str) -> JSON | None:
        return self._get(
            f"VirtualMachineSnapshotContent {namespace}/{name}",
            VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
            namespace,
            name,
        )

    def list_vm_restores(self, namespace: str) -> list[JSON]:
        # KubeVirt reads an informer's cache; restores are created rarely, so a LIST per review is enough.
        return self._list(f"VirtualMachineRestores of {namespace}", VIRTUAL_MACHINE_RESTORES, namespace)

    def server_version(self) -> JSON:
        """The API server's ``/version`` (what virt-api's health check reports)."""
        info = self._request("the API server version", "GET", "/version")
        return info if isinstance(info, dict) else {}

    def list_kubevirts(self, namespace: str | None) -> list[JSON]:
        """The KubeVirt CRs in ``namespace`` (all namespaces when ``None``)."""
        return self._list("the KubeVirt configuration", KUBEVIRTS, namespace or None)

    def patch_vmi(self, namespace: str, name: str, patch: list[JSON]) -> None:
        self._request(
            f"VirtualMachineInstance {namespace}/{name} (patch)",
            "PATCH",
            VIRTUAL_MACHINE_INSTANCES.path(namespace, name),
            body=patch,
            content_type=PATCH_CONTENT_TYPES["json"],
        )
