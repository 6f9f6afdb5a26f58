"""What every worker pod of a claim shares, importer and upload server alike (CDI's controller/common):
the restricted security context, the CDI CR's workload placement, the annotations a claim passes on,
the claim's users, and the claim annotations recording a pod that could not be started."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, ApiError, EventSink, KubeApi
from kubevirt.client.errors import NotFoundError
from kubevirt.controller.store import NAMESPACE_INDEX
from kubevirt_api.cdi.constants import Annotation, Reason
from kubevirt_api.view import JSON

QEMU_UID = 107  # the qemu user (and group) of the worker images
DATA_VOLUME = "cdi-data-vol"
SCRATCH_VOLUME = "cdi-scratch-vol"
# Pod annotations a claim passes on to its worker, with the value used when the claim has none.
ALLOWED_POD_ANNOTATIONS = {
    "k8s.v1.cni.cncf.io/networks": "",
    "sidecar.istio.io/inject": "false",
    "linkerd.io/inject": "disabled",
    Annotation.POD_PRIORITY_CLASS: "",
    "v1.multus-cni.io/default-network": "",
}
STARTING_POD_MESSAGE = (
    "Error starting pod '%s': For more information, request access to cdi-deploy logs from your sysadmin"
)


def allowed_annotations(pvc: Mapping[str, Any]) -> dict[str, str]:
    annotations = meta.annotations_of(pvc)
    result = {}
    for key, default in ALLOWED_POD_ANNOTATIONS.items():
        value = annotations.get(key, default)
        if value:
            result[key] = value
    return result


def restrict(pod_spec: JSON) -> None:
    """CDI's restricted security context: no capabilities, no root, the qemu user, RuntimeDefault seccomp;
    the volumes' group is qemu's when anything is mounted."""
    mounted = False
    for container in pod_spec["containers"]:
        container["securityContext"] = {
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "runAsUser": QEMU_UID,
        }
        mounted = mounted or bool(container.get("volumeMounts"))
    context: JSON = {"seccompProfile": {"type": "RuntimeDefault"}}
    if mounted:
        context["fsGroup"] = QEMU_UID
    pod_spec["securityContext"] = context


def active_cdi(caches: Caches) -> Mapping[str, Any] | None:
    """The CDI CR (there is one)."""
    for cr in caches.cdis.list():
        return cr
    return None


def workload_placement(caches: Caches) -> JSON:
    """The node placement of CDI's workloads (the CDI CR's ``spec.workloads``)."""
    placement: JSON = {}
    workloads = ((active_cdi(caches) or {}).get("spec") or {}).get("workloads") or {}
    for key in ("nodeSelector", "tolerations", "affinity"):
        if workloads.get(key):
            placement[key] = workloads[key]
    return placement


@dataclass(frozen=True, kw_only=True)
class WorkerImage:
    """The image a worker pod runs and how (the importer's and the upload server's alike)."""

    image: str
    pull_policy: str = "IfNotPresent"
    verbosity: str = "1"


def worker_container(name: str, settings: WorkerImage) -> JSON:
    """The start of a worker's container: its name, image, pull policy and verbosity argument."""
    return {
        "name": name,
        "image": settings.image,
        "imagePullPolicy": settings.pull_policy,
        "args": [f"-v={settings.verbosity}"],
    }


def claim_volume(name: str, claim: str) -> JSON:
    """A writable volume of the claim ``claim``."""
    return {"name": name, "persistentVolumeClaim": {"claimName": claim, "readOnly": False}}


def worker_pod(
    pvc: Mapping[str, Any],
    caches: Caches,
    *,
    name: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    container: JSON,
    volumes: list[JSON],
) -> JSON:
    """A claim's worker pod (owned by the claim) around ``container``: CDIConfig's default resources,
    restarted on failure, and what :func:`common_pod_spec` adds."""
    resources = caches.config_status().get("defaultPodResourceRequirements")
    if resources:
        container["resources"] = copy.deepcopy(resources)
    pod_spec: JSON = {"containers": [container], "volumes": volumes, "restartPolicy": "OnFailure"}
    common_pod_spec(pvc, caches, pod_spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta.namespace(pvc),
            "labels": dict(labels),
            "annotations": dict(annotations),
            "ownerReferences": [meta.owner_reference(pvc, "v1", "PersistentVolumeClaim")],
        },
        "spec": pod_spec,
    }


def common_pod_spec(pvc: Mapping[str, Any], caches: Caches, pod_spec: JSON) -> JSON:
    """Adds what CDI gives every worker pod: placement, the claim's priority class, CDIConfig's pull
    secrets, the restricted security context."""
    pod_spec.update(workload_placement(caches))
    priority_class = meta.annotations_of(pvc).get(Annotation.POD_PRIORITY_CLASS)
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    pull_secrets = caches.config_status().get("imagePullSecrets")
    if pull_secrets:
        pod_spec["imagePullSecrets"] = list(pull_secrets)
    restrict(pod_spec)
    return pod_spec


def bool_text(value: str | None) -> str:
    """Go's ParseBool of an annotation, printed back ("false" when it is not a boolean)."""
    return "true" if (value or "").lower() in ("true", "1", "t") else "false"


def pods_using(caches: Caches, pvc: Mapping[str, Any]) -> list[JSON]:
    """The unfinished pods of the claim's namespace that mount it."""
    claim = meta.name(pvc)
    users = []
    for pod in caches.pods.by_index(NAMESPACE_INDEX, meta.namespace(pvc)):
        if meta.pod_phase(pod) in ("Succeeded", "Failed"):
            continue
        volumes = (pod.get("spec") or {}).get("volumes") or ()
        if any((v.get("persistentVolumeClaim") or {}).get("claimName") == claim for v in volumes):
            users.append(pod)
    return users


def delete_pod(api: KubeApi, pod: Mapping[str, Any]) -> None:
    with contextlib.suppress(NotFoundError):
        api.delete(PODS, meta.namespace(pod), meta.name(pod), uid=meta.uid(pod))


def record_start_failure(api: KubeApi, events: EventSink, pvc: JSON, pod_name: str, err: ApiError) -> None:
    """CDI's HandleFailedPod: a Warning without the API's words, the running condition and a Failed pod
    phase on the claim."""
    reason = Reason.EXCEEDED_QUOTA if "exceeded quota" in str(err) else Reason.STARTING_POD
    message = STARTING_POD_MESSAGE % pod_name
    events.event(pvc, "Warning", reason, message)
    prefix = Annotation.RUNNING_CONDITION
    meta.set_annotations(
        pvc,
        {
            prefix: "false",
            f"{prefix}.reason": reason,
            f"{prefix}.message": message,
            Annotation.POD_PHASE: "Failed",
        },
    )
    api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), pvc)


def should_delete_pod(pvc: Mapping[str, Any]) -> bool:
    """CDI's ShouldDeletePod: a finished worker goes unless the claim asks to retain it (and no restart
    or deletion overrides that)."""
    annotations = meta.annotations_of(pvc)
    return (
        annotations.get(Annotation.POD_RETAIN_AFTER_COMPLETION) != "true"
        or annotations.get(Annotation.REQUIRES_SCRATCH) == "true"
        or annotations.get(Annotation.REQUIRES_DIRECT_IO) == "true"
        or meta.deleting(pvc)
    )
