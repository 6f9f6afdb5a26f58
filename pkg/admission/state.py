"""Cluster state some admitters consult, passed in so the rules stay pure and testable."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kubevirt_api.view import JSON


class ClusterStateError(RuntimeError):
    """The state could not be read (API server unreachable, no client configured, ...)."""


class ClusterState(Protocol):
    def get_vmi(self, namespace: str, name: str) -> JSON | None:
        """The VMI, or ``None`` when it does not exist; raises :class:`ClusterStateError`."""
        ...

    def list_migrations(self, namespace: str, vmi_name: str) -> list[JSON]:
        """Migrations labelled ``kubevirt.io/vmi-name=<vmi_name>`` in the namespace."""
        ...

    def get_pod(self, namespace: str, name: str) -> JSON | None:
        """The pod, or ``None`` when it does not exist."""
        ...


@runtime_checkable
class InstancetypeState(Protocol):
    def get_instancetype_object(self, kind: str, namespace: str, name: str) -> JSON | None:
        """An instance type or preference of ``kind`` (one of the four ``instancetype.kubevirt.io``
        kinds; ``namespace`` is ignored for the cluster-wide ones), or ``None`` when it does not exist;
        raises :class:`ClusterStateError`."""
        ...


@runtime_checkable
class RevisionState(Protocol):
    def get_controller_revision(self, namespace: str, name: str) -> JSON | None:
        """A ControllerRevision (a VM's stored instance type or preference), or ``None`` when it does
        not exist; raises :class:`ClusterStateError`."""
        ...


@runtime_checkable
class VolumeSourceState(Protocol):
    def get_volume_source(self, kind: str, namespace: str, name: str) -> JSON | None:
        """A ``PersistentVolumeClaim``, ``DataVolume`` or ``DataSource`` (for ``inferFromVolume``), or
        ``None`` when it does not exist; raises :class:`ClusterStateError`."""
        ...


@runtime_checkable
class PresetState(Protocol):
    def list_vmi_presets(self, namespace: str) -> list[JSON]:
        """The VirtualMachineInstancePresets of a namespace; raises :class:`ClusterStateError`.
        They may be a cache's own objects, shared by every review: read them, never change them."""
        ...


@runtime_checkable
class SnapshotState(Protocol):
    """What the VirtualMachineRestore admitter reads; each read raises :class:`ClusterStateError`."""

    def get_vm(self, namespace: str, name: str) -> JSON | None:
        """The VirtualMachine, or ``None`` when it does not exist."""
        ...

    def get_vm_snapshot(self, namespace: str, name: str) -> JSON | None:
        """The VirtualMachineSnapshot, or ``None`` when it does not exist."""
        ...

    def get_vm_snapshot_content(self, namespace: str, name: str) -> JSON | None:
        """The VirtualMachineSnapshotContent, or ``None`` when it does not exist."""
        ...

    def list_vm_restores(self, namespace: str) -> list[JSON]:
        """The VirtualMachineRestores of a namespace."""
        ...


class StaticClusterState:
    """A fixed set of objects; what tests and offline tools use."""

    def __init__(
        self,
        vmis: list[JSON] | None = None,
        migrations: list[JSON] | None = None,
        pods: list[JSON] | None = None,
        instancetype_objects: list[JSON] | None = None,
        presets: list[JSON] | None = None,
        snapshot_objects: list[JSON] | None = None,
    ) -> None:
        self._presets = list(presets or [])
        # VMs, snapshots, snapshot contents and restores, told apart by their ``kind``.
        self._snapshot_objects = list(snapshot_objects or [])
        self._vmis = list(vmis or [])
        self._migrations = list(migrations or [])
        self._pods = list(pods or [])
        # Instance types and preferences of all four kinds, told apart by their ``kind``.
        self._instancetype_objects = list(instancetype_objects or [])

    @staticmethod
    def _meta(obj: JSON) -> JSON:
        meta = obj.get("metadata")
        return meta if isinstance(meta, dict) else {}

    def _find(self, objects: list[JSON], namespace: str, name: str) -> JSON | None:
        for candidate in objects:
            meta = self._meta(candidate)
            if meta.get("name") == name and meta.get("namespace", "") == namespace:
                return candidate
        return None

    def get_vmi(self, namespace: str, name: str) -> JSON | None:
        return self._find(self._vmis, namespace, name)

    def get_pod(self, namespace: str, name: str) -> JSON | None:
        return self._find(self._pods, namespace, name)

    def get_controller_revision(self, namespace: str, name: str) -> JSON | None:
        revisions = [o for o in self._instancetype_objects if o.get("kind") == "ControllerRevision"]
        return self._find(revisions, namespace, name)

    def get_volume_source(self, kind: str, namespace: str, name: str) -> JSON | None:
        # Given with the instance types: any object list may hold PVCs, DataVolumes and DataSources.
        return self._find([o for o in self._instancetype_objects if o.get("kind") == kind], namespace, name)

    def get_instancetype_object(self, kind: str, namespace: str, name: str) -> JSON | None:
        of_kind = [o for o in self._instancetype_objects if o.get("kind") == kind]
        if kind.startswith("VirtualMachineCluster"):
            return next((o for o in of_kind if self._meta(o).get("name") == name), None)
        return self._find(of_kind, namespace, name)

    def list_vmi_presets(self, namespace: str) -> list[JSON]:
        return [p for p in self._presets if self._meta(p).get("namespace", "") == namespace]

    def _of_kind(self, kind: str) -> list[JSON]:
        return [o for o in self._snapshot_objects if o.get("kind") == kind]

    def get_vm(self, namespace: str, name: str) -> JSON | None:
        return self._find(self._of_kind("VirtualMachine"), namespace, name)

    def get_vm_snapshot(self, namespace: str, name: str) -> JSON | None:
        return self._find(self._of_kind("VirtualMachineSnapshot"), namespace, name)

    def get_vm_snapshot_content(self, namespace: str, name: str) -> JSON | None:
        return self._find(self._of_kind("VirtualMachineSnapshotContent"), namespace, name)

    def list_vm_restores(self, namespace: str) -> list[JSON]:
        restores = self._of_kind("VirtualMachineRestore")
        return [r for r in restores if self._meta(r).get("namespace", "") == namespace]

    def list_migrations(self, namespace: str, vmi_name: str) -> list[JSON]:
        found = []
        for migration in self._migrations:
            meta = self._meta(migration)
            labels = meta.get("labels") or {}
            if meta.get("namespace", "") == namespace and labels.get("kubevirt.io/vmi-name") == vmi_name:
                found.append(migration)
        return found


class NoClusterState:
    """virt-api without a Kubernetes client: lookups fail with a clear reason."""

    def get_vmi(self, namespace: str, name: str) -> JSON | None:
        raise ClusterStateError("no Kubernetes API configured to look up VirtualMachineInstances")

    def list_migrations(self, namespace: str, vmi_name: str) -> list[JSON]:
        raise ClusterStateError("no Kubernetes API configured to look up migrations")

    def get_pod(self, namespace: str, name: str) -> JSON | None:
        raise ClusterStateError("no Kubernetes API configured to look up pods")

    def get_instancetype_object(self, kind: str, namespace: str, name: str) -> JSON | None:
        raise ClusterStateError("no Kubernetes API configured to look up instance types and preferences")

    def list_vmi_presets(self, namespace: str) -> list[JSON]:
        # Without an API there are no presets to apply; VMIs are still defaulted.
        return []

    def get_volume_source(self, kind: str, namespace: str, name: str) -> JSON | None:
        raise ClusterStateError(f"no Kubernetes API configured to look up {kind}s")

    def get_vm(self, namespace: str, name: str) -> JSON | None:
        raise ClusterStateError("no Kubernetes API configured to look up VirtualMachines")

    def get_vm_snapshot(self, namespace: str, name: str) -> JSON | None:
        raise ClusterStateError("no Kubernetes API configured to look up VirtualMachineSnapshots")

    def get_vm_snapshot_content(self, namespace: str, name: str) -> JSON | None:
        raise ClusterStateError("no Kubernetes API configured to look up VirtualMachineSnapshotContents")

    def list_vm_restores(self, namespace: str) -> list[JSON]:
        raise ClusterStateError("no Kubernetes API configured to look up VirtualMachineRestores")
