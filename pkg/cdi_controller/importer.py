"""The import controller: for each claim carrying an import source it runs the importer pod
``importer-<claim>`` and copies the pod's state onto the claim's annotations, which the DataVolume
controller turns into phases and conditions (CDI's PVC-level import-controller).

A claim is handled once Bound, or at once when WaitForFirstConsumer is not honoured (the cluster gate off,
or the claim asks for immediate binding): the importer pod is then the claim's first consumer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt.cdi_controller import meta, podstate
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.importerpod import (
    ImporterSettings,
    importer_pod,
    importer_pod_name,
    new_importer_pod_name,
    requires_scratch,
    scratch_claim_name,
)
from kubevirt.cdi_controller.scratch import ensure_scratch
from kubevirt.cdi_controller.workerpod import delete_pod, pods_using, record_start_failure, should_delete_pod
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, AlreadyExistsError, ApiError, EventSink, KubeApi
from kubevirt.controller import RequeueAfter
from kubevirt.log import get_logger
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.cdi.constants import Annotation, Reason
from kubevirt_api.view import JSON

POLL_SECONDS = 2.0  # CDI looks at an unfinished import every 2 s
IMPORT_SUCCESSFUL = "Import Successful"
_log = get_logger()


def import_complete(pvc: Mapping[str, Any]) -> bool:
    return meta.annotations_of(pvc).get(Annotation.POD_PHASE) == "Succeeded"


class ImportController:
    def __init__(
        self, *, api: KubeApi, events: EventSink, caches: Caches, settings: ImporterSettings
    ) -> None:
        self._api = api
        self._events = events
        self._caches = caches
        self._settings = settings

    def reconcile(self, key: str) -> None:
        pvc = self._caches.pvcs.get_by_key(key)
        if pvc is None or not self.should_handle(pvc):
            return
        pvc = meta.editable(pvc)
        pod = self._importer_pod(pvc)
        if pod is None:
            if not import_complete(pvc) and not meta.deleting(pvc):
                self._start(pvc)
        elif meta.deleting(pvc):
            self._delete_pod(pod)
        else:
            pvc = self._follow_pod(pvc, pod)
        if not import_complete(pvc):
            raise RequeueAfter(POLL_SECONDS)

    def should_handle(self, pvc: Mapping[str, Any]) -> bool:
        annotations = meta.annotations_of(pvc)
        if cdi.EXTERNAL_POPULATION in annotations or import_complete(pvc):
            return False
        if Annotation.IMPORT_ENDPOINT not in annotations and Annotation.IMPORT_SOURCE not in annotations:
            return False
        honour_wffc = (
            Annotation.IMMEDIATE_BINDING not in annotations and self._caches.honor_wait_for_first_consumer()
        )
        return not honour_wffc or meta.claim_phase(pvc) == meta.CLAIM_BOUND

    # The pod.

    def _importer_pod(self, pvc: JSON) -> JSON | None:
        pod = self._caches.pods.get_by_key(f"{meta.namespace(pvc)}/{importer_pod_name(pvc)}")
        if pod is None:
            return None
        if not meta.controlled_by(pod, meta.uid(pvc)):
            raise ApiError(409, "Conflict", "Pod is not owned by PVC")
        return pod

    def _start(self, pvc: JSON) -> None:
        users = self._pods_using(pvc)
        if users:
            for user in users:
                self._events.event(
                    pvc,
                    "Warning",
                    Reason.IMPORT_TARGET_IN_USE,
                    f"pod {meta.key(user)} using PersistentVolumeClaim {meta.name(pvc)}",
                )
            raise RequeueAfter(POLL_SECONDS)
        annotations = pvc["metadata"]["annotations"]
        if Annotation.IMPORT_POD_NAME not in annotations:
            # First pass: the pod's name is recorded, the pod made on the next one.
            annotations[Annotation.IMPORT_POD_NAME] = new_importer_pod_name(pvc)
            if requires_scratch(pvc):
                annotations[Annotation.REQUIRES_SCRATCH] = "true"
            self._api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), pvc)
            return
        self._create_pod(pvc)

    def _create_pod(self, pvc: JSON) -> None:
        scratch = scratch_claim_name(pvc) if requires_scratch(pvc) else None
        body = importer_pod(pvc, self._settings, self._caches, scratch=scratch)
        try:
            pod = self._api.create(PODS, meta.namespace(pvc), body)
        except AlreadyExistsError:
            return  # made by an earlier pass the cache has not shown yet
        except ApiError as err:
            self._pod_failed(pvc, body["metadata"]["name"], err)
            raise
        _log.info("importer pod created", pod=meta.name(pod), namespace=meta.namespace(pod))
        if scratch is not None:
            self._ensure_scratch(pvc, pod)

    def _pod_failed(self, pvc: JSON, pod_name: str, err: ApiError) -> None:
        record_start_failure(self._api, self._events, pvc, pod_name, err)

    def _pods_using(self, pvc: JSON) -> list[JSON]:
        return pods_using(self._caches, pvc)

    def _delete_pod(self, pod: Mapping[str, Any]) -> None:
        delete_pod(self._api, pod)

    # Following the pod.

    def _follow_pod(self, pvc: JSON, pod: Mapping[str, Any]) -> JSON:
        before = meta.editable(pvc)
        annotations: dict[str, str] = pvc["metadata"]["annotations"]
        message = podstate.termination_message(pod)
        podstate.annotations_from_pod(annotations, pod, message)
        restart = message is not None and message.scratch_space_required
        if podstate.oom_killed(pod):
            restart = True
            annotations[Annotation.REQUIRES_DIRECT_IO] = "true"
        failure = podstate.exit_failure(pod)
        if failure is not None:
            self._events.event(pvc, "Warning", Reason.IMPORT_FAILED_PVC, failure)
        annotations[Annotation.IMPORT_POD_NAME] = meta.name(pod)
        if not restart:
            annotations[Annotation.POD_PHASE] = meta.pod_phase(pod)
        annotations[Annotation.POD_SCHEDULABLE] = "true"
        if annotations.get(Annotation.POD_PHASE) == "Pending" and podstate.unschedulable(pod):
            annotations[Annotation.POD_SCHEDULABLE] = "false"
        if _cache_mode_none(pod):
            annotations[Annotation.REQUIRES_DIRECT_IO] = "false"
        if meta.pod_phase(pod) == "Pending" and requires_scratch(pvc):
            self._ensure_scratch(pvc, pod)
        else:
            for suffix in ("", ".message", ".reason"):
                annotations.pop(Annotation.BOUND_CONDITION + suffix, None)
        labels = pvc["metadata"]["labels"]
        labels.setdefault(cdi.Label.APP, cdi.Label.APP_VALUE)
        if import_complete(pvc) and message is not None:
            for key, value in message.labels.items():
                labels.setdefault(key, value)
        if pvc != before:
            pvc = self._api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), pvc)
        if import_complete(pvc) or restart:
            if not restart:
                self._events.event(pvc, "Normal", Reason.IMPORT_SUCCEEDED, IMPORT_SUCCESSFUL)
            if should_delete_pod(pvc):
                self._delete_pod(pod)
        return pvc

    def _ensure_scratch(self, pvc: JSON, pod: Mapping[str, Any]) -> None:
        ensure_scratch(self._api, self._events, self._caches, pvc, pod)
        pvc["metadata"]["annotations"][Annotation.REQUIRES_SCRATCH] = "false"


def _cache_mode_none(pod: Mapping[str, Any]) -> bool:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return any(
        env.get("name") == cdi.ImporterEnv.CACHE_MODE and env.get("value") == cdi.CACHE_MODE_TRY_NONE
        for env in containers[0].get("env") or ()
    )


def claim_key_of_pod(pod: Mapping[str, Any]) -> str | None:
    """The key of the claim controlling a pod (the importer pod's owner)."""
    for ref in meta.meta(pod).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "PersistentVolumeClaim":
            return f"{meta.namespace(pod)}/{ref.get('name')}"
    return None
