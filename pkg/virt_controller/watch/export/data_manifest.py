"""The ConfigMap an exported VM's server serves its manifests from (KubeVirt's
``createDataManifestConfigMap``): the VM (expanded, without status, its DataVolume templates importing
from an HTTP URL the importer fills in), a DataVolume per claim no template makes, the export's hosts and
the CAs to trust them by, all mounted into the exporter pod at ``/manifest_data``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final

from kubevirt.controller import Store, key_for
from kubevirt.export.paths import (
    DATA_VOLUME_KEY_PREFIX,
    EXPORT_NAME_KEY,
    EXTERNAL_CA_KEY,
    EXTERNAL_HOST_KEY,
    INTERNAL_CA_KEY,
    INTERNAL_HOST_KEY,
    VM_MANIFEST_KEY,
)
from kubevirt.virt_controller.watch.snapshot.restore_spec import templates_of, volumes_of
from kubevirt_api.view import JSON

from .names import export_ca_config_map_name, manifest_config_map_name

# The key of the CA in the CA ConfigMaps the manifests carry.
CA_PEM_KEY: Final = "ca.pem"


def _go_json(value: Any) -> str:
    """Compact JSON, as Go's ``json.Marshal`` writes it."""
    return json.dumps(value, separators=(",", ":"))


def _claim_name(volume: Mapping[str, Any]) -> str:
    if volume.get("dataVolume") is not None:
        return str(volume["dataVolume"].get("name") or "")
    if volume.get("persistentVolumeClaim") is not None:
        return str(volume["persistentVolumeClaim"].get("claimName") or "")
    return ""


def _http_source() -> JSON:
    return {"http": {"url": ""}}


def vm_definition(vm: Mapping[str, Any]) -> JSON:
    """The expanded VM as exported: only name, namespace, labels and annotations kept of its metadata, no
    status, and the templates of its volumes importing from HTTP instead of their source."""
    exported = copy.deepcopy(dict(vm))
    meta = vm.get("metadata") or {}
    cleaned: JSON = {"name": meta.get("name"), "namespace": meta.get("namespace"), "creationTimestamp": None}
    for field in ("labels", "annotations"):
        if meta.get(field):
            cleaned[field] = dict(meta[field])
    exported["metadata"] = cleaned
    exported["status"] = {}
    used = {_claim_name(volume) for volume in volumes_of(vm)} - {""}
    templates = []
    for template in templates_of(vm):
        if (template.get("metadata") or {}).get("name") in used:
            template = copy.deepcopy(template)
            spec = template.setdefault("spec", {})
            spec["source"] = _http_source()
            spec.pop("sourceRef", None)
        templates.append(template)
    if templates:
        exported.setdefault("spec", {})["dataVolumeTemplates"] = templates
    return exported


def data_volumes(vm: Mapping[str, Any], pvcs: Store[JSON]) -> list[JSON]:
    """A DataVolume importing from HTTP for each claim of the VM that no template makes, sized and
    shaped as the claim."""
    namespace = (vm.get("metadata") or {}).get("namespace")
    made = {(template.get("metadata") or {}).get("name") for template in templates_of(vm)}
    found = []
    for volume in volumes_of(vm):
        name = _claim_name(volume)
        if not name or name in made:
            continue
        pvc = pvcs.get_by_key(key_for(namespace, name))
        if pvc is None:
            continue
        pvc_spec = pvc.get("spec") or {}
        storage: JSON = {}
        if pvc_spec.get("accessModes") is not None:
            storage["accessModes"] = list(pvc_spec["accessModes"])
        storage["resources"] = copy.deepcopy(pvc_spec.get("resources") or {})
        if pvc_spec.get("volumeMode") is not None:
            storage["volumeMode"] = pvc_spec["volumeMode"]
        found.append(
            {
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
                "spec": {"source": _http_source(), "storage": storage},
                "status": {},
            }
        )
    return found


def _ca_config_map(ca: str, export_name: str) -> str:
    return _go_json(
        {
            "metadata": {"name": export_ca_config_map_name(export_name), "creationTimestamp": None},
            "data": {CA_PEM_KEY: ca},
        }
    )


def data_manifest_config_map(
    export: Mapping[str, Any],
    vm: Mapping[str, Any],
    pvcs: Store[JSON],
    *,
    internal_host: str,
    internal_ca: str,
    external_host: str,
    external_ca: str,
    owner: JSON,
) -> JSON:
    """``external_host`` is "" when the export is not reachable from outside (no export proxy ingress)."""
    export_name = str(export["metadata"]["name"])
    data = {
        INTERNAL_HOST_KEY: internal_host,
        INTERNAL_CA_KEY: _ca_config_map(internal_ca, export_name),
    }
    if external_host:
        data[EXTERNAL_HOST_KEY] = external_host
        data[EXTERNAL_CA_KEY] = _ca_config_map(external_ca, export_name)
    data[VM_MANIFEST_KEY] = _go_json(vm_definition(vm))
    for dv in data_volumes(vm, pvcs):
        data[DATA_VOLUME_KEY_PREFIX + dv["metadata"]["name"]] = _go_json(dv)
    data[EXPORT_NAME_KEY] = export_name
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": manifest_config_map_name(export_name),
            "namespace": (vm.get("metadata") or {}).get("namespace"),
            "ownerReferences": [owner],
        },
        "data": data,
    }
