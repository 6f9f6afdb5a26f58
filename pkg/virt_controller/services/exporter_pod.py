"""The export server's pod as the template service renders it (KubeVirt's ``RenderExporterManifest``): one
``exporter`` container of the exporter image, owned by the VirtualMachineExport, never restarted, without
privileges. The export controller adds the volumes, environment, certificates and probe it serves with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubevirt.admission.k8s_names import LABEL_MAX, bounded_name
from kubevirt.export.paths import POD_NAME_ENV
from kubevirt_api.core.v1.constants import APP_LABEL
from kubevirt_api.export.v1beta1.types import EXPORT_GROUP_NAME, EXPORT_VERSIONS
from kubevirt_api.view import JSON

EXPORTER_CONTAINER: Final = "exporter"
# The ``kubevirt.io`` label of the rendered pod (``exportv1.App``).
EXPORTER_APP: Final = "virt-exporter"
EXPORT_API_VERSION: Final = f"{EXPORT_GROUP_NAME}/{EXPORT_VERSIONS[0]}"
EXPORT_KIND: Final = "VirtualMachineExport"
# KubeVirt's defaults for the export server container (``supportContainerResources`` type ``vmexport``).
DEFAULT_LIMITS: Final = {"cpu": "1", "memory": "1024Mi"}
DEFAULT_REQUESTS: Final = {"cpu": "100m", "memory": "200Mi"}


def exporter_pod_name(name_prefix: str, export_name: str) -> str:
    """``<prefix>-<export>``, hashed down to a DNS label when longer."""
    return bounded_name(name_prefix, export_name, LABEL_MAX)


def render_exporter_pod(
    export: Mapping[str, Any],
    name_prefix: str,
    *,
    image: str,
    image_pull_policy: str,
    limits: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
) -> JSON:
    meta = export["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": exporter_pod_name(name_prefix, str(meta["name"])),
            "namespace": meta.get("namespace"),
            "ownerReferences": [
                {
                    "apiVersion": EXPORT_API_VERSION,
                    "kind": EXPORT_KIND,
                    "name": meta["name"],
                    "uid": meta.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "labels": {APP_LABEL: EXPORTER_APP},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": EXPORTER_CONTAINER,
                    "image": image,
                    "imagePullPolicy": image_pull_policy,
                    "env": [
                        {"name": POD_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
                    ],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "resources": {
                        "limits": {**DEFAULT_LIMITS, **(limits or {})},
                        "requests": {**DEFAULT_REQUESTS, **(requests or {})},
                    },
                }
            ],
        },
    }
