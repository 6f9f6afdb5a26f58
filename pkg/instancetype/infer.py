"""``inferFromVolume``: a matcher naming a volume gets the instance type or preference that volume's
PVC, DataVolume or DataSource names in its ``instancetype.kubevirt.io/default-*`` labels.

KubeVirt's VM mutating webhook does this on every CREATE and UPDATE. The chain it follows from the
named volume: a PVC; a DataVolume (a ``dataVolumeTemplates`` entry first, else the DataVolume object,
else a PVC of that name), whose labels or ``source.pvc`` / ``sourceRef`` (a DataSource, whose labels
or ``source.pvc``) lead on. With ``inferFromVolumeFailurePolicy: Ignore`` a failure that is only a
missing label or an unsupported source clears the matcher instead of refusing the VM; a successful
inference under that policy also drops the template's guest memory (virtctl sets it as a fallback).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kubevirt_api.instancetype import constants as names
from kubevirt_api.view import JSON

__all__ = [
    "DATA_SOURCE",
    "DATA_VOLUME",
    "PERSISTENT_VOLUME_CLAIM",
    "InferenceError",
    "VolumeSources",
    "infer_matchers",
]


PERSISTENT_VOLUME_CLAIM: Final = "PersistentVolumeClaim"
DATA_VOLUME: Final = "DataVolume"
DATA_SOURCE: Final = "DataSource"
_NOT_FOUND: Final = {
    PERSISTENT_VOLUME_CLAIM: 'persistentvolumeclaims "{}" not found',
    DATA_VOLUME: 'datavolumes.cdi.kubevirt.io "{}" not found',
    DATA_SOURCE: 'datasources.cdi.kubevirt.io "{}" not found',
}
_IGNORE: Final = "Ignore"


class VolumeSources(Protocol):
    def get_volume_source(self, kind: str, namespace: str, name: str) -> JSON | None:
        """A PVC, DataVolume or DataSource (``kind``), or None when it does not exist."""
        ...


class InferenceError(Exception):
    """Inference failed; ``ignorable`` failures are cleared by the ``Ignore`` policy."""

    def __init__(self, message: str, *, ignorable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.ignorable = ignorable


@dataclass(frozen=True)
class _Labels:
    name: str
    kind: str


_INSTANCETYPE_LABELS: Final = _Labels(names.DEFAULT_INSTANCETYPE_LABEL, names.DEFAULT_INSTANCETYPE_KIND_LABEL)
_PREFERENCE_LABELS: Final = _Labels(names.DEFAULT_PREFERENCE_LABEL, names.DEFAULT_PREFERENCE_KIND_LABEL)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class _Inference:
    def __init__(self, vm: Mapping[str, Any], sources: VolumeSources, labels: _Labels) -> None:
        self._vm = vm
        self._namespace = str(_mapping(vm.get("metadata")).get("namespace") or "")
        self._sources = sources
        self._labels = labels

    def _get(self, kind: str, namespace: str, name: str) -> JSON:
        found = self._sources.get_volume_source(kind, namespace, name)
        if found is None:
            raise InferenceError(_NOT_FOUND[kind].format(name))
        return found

    def _from_labels(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        labels = _mapping(_mapping(obj.get("metadata")).get("labels"))
        if self._labels.name not in labels:
            message = f"unable to find required {self._labels.name} label on the volume"
            raise InferenceError(message, ignorable=True)
        return str(labels[self._labels.name]), str(labels.get(self._labels.kind) or "")

    def from_volumes(self, volume_name: str) -> tuple[str, str]:
        spec = _mapping(_mapping(_mapping(self._vm.get("spec")).get("template")).get("spec"))
        for volume in spec.get("volumes") or ():
            volume = _mapping(volume)
            if volume.get("name") != volume_name:
                continue
            if "persistentVolumeClaim" in volume:
                claim = _mapping(volume["persistentVolumeClaim"])
                return self._from_pvc(str(claim.get("claimName") or ""), self._namespace)
            if "dataVolume" in volume:
                return self._from_data_volume(str(_mapping(volume["dataVolume"]).get("name") or ""))
            message = f"unable to infer defaults from volume {volume_name} as type is not supported"
            raise InferenceError(message, ignorable=True)
        raise InferenceError(f"unable to find volume {volume_name} to infer defaults")

    def _from_pvc(self, name: str, namespace: str) -> tuple[str, str]:
        return self._from_labels(self._get(PERSISTENT_VOLUME_CLAIM, namespace, name))

    def _from_data_volume(self, name: str) -> tuple[str, str]:
        for template in _mapping(self._vm.get("spec")).get("dataVolumeTemplates") or ():
            template = _mapping(template)
            if _mapping(template.get("metadata")).get("name") == name:
                return self._from_data_volume_spec(_mapping(template.get("spec")))
        data_volume = self._sources.get_volume_source(DATA_VOLUME, self._namespace, name)
        if data_volume is None:
            return self._from_pvc(name, self._namespace)
        try:
            return self._from_labels(data_volume)
        except InferenceError:
            return self._from_data_volume_spec(_mapping(data_volume.get("spec")))

    def _from_data_volume_spec(self, spec: Mapping[str, Any]) -> tuple[str, str]:
        pvc = _mapping(_mapping(spec.get("source")).get("pvc"))
        if pvc:
            return self._from_pvc(str(pvc.get("name") or ""), str(pvc.get("namespace") or ""))
        ref = spec.get("sourceRef")
        if isinstance(ref, Mapping):
            if ref.get("kind") == DATA_SOURCE:
                namespace = ref.get("namespace")
                return self._from_data_source(
                    str(ref.get("name") or ""), str(namespace) if namespace is not None else self._namespace
                )
            kind = ref.get("kind") or ""
            message = f"unable to infer defaults from DataVolumeSourceRef as Kind {kind} is not supported"
            raise InferenceError(message, ignorable=True)
        message = "unable to infer defaults from DataVolumeSpec as DataVolumeSource is not supported"
        raise InferenceError(message, ignorable=True)

    def _from_data_source(self, name: str, namespace: str) -> tuple[str, str]:
        data_source = self._get(DATA_SOURCE, namespace, name)
        try:
            return self._from_labels(data_source)
        except InferenceError:
            pvc = _mapping(_mapping(_mapping(data_source.get("spec")).get("source")).get("pvc"))
            if pvc:
                return self._from_pvc(str(pvc.get("name") or ""), str(pvc.get("namespace") or ""))
        message = "unable to infer defaults from DataSource that doesn't provide DataVolumeSourcePVC"
        raise InferenceError(message, ignorable=True)


def _infer_one(vm: JSON, key: str, sources: VolumeSources, labels: _Labels) -> None:
    spec = vm.get("spec")
    matcher = spec.get(key) if isinstance(spec, dict) else None
    if not isinstance(matcher, Mapping) or not matcher.get("inferFromVolume"):
        return
    assert isinstance(spec, dict)
    ignore = matcher.get("inferFromVolumeFailurePolicy") == _IGNORE
    try:
        name, kind = _Inference(vm, sources, labels).from_volumes(str(matcher["inferFromVolume"]))
    except InferenceError as err:
        if err.ignorable and ignore:
            del spec[key]
            return
        raise
    if ignore and key == "instancetype":
        domain = _mapping(_mapping(_mapping(spec.get("template")).get("spec")).get("domain"))
        if isinstance(domain, dict):
            domain.pop("memory", None)
    spec[key] = {"name": name, "kind": kind} if kind else {"name": name}


def infer_matchers(vm: JSON, sources: VolumeSources) -> None:
    """Replaces inferring matchers in ``vm`` (JSON, changed in place) with the inferred names;
    raises :class:`InferenceError` with KubeVirt's message when that fails."""
    _infer_one(vm, "instancetype", sources, _INSTANCETYPE_LABELS)
    _infer_one(vm, "preference", sources, _PREFERENCE_LABELS)
