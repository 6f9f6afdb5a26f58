"""The upload controller: for each claim annotated ``cdi.kubevirt.io/storage.upload.target`` it runs the
upload server pod ``cdi-upload-<claim>`` with its TLS Secret and scratch claim, and the Service the upload
proxy posts to, and copies the pod's state onto the claim's annotations (phase, readiness, restarts, the
running condition), which the DataVolume controller turns into Upload* phases (CDI's PVC-level
upload-controller). A host-assisted clone target (``k8s.io/CloneRequest``) gets the same server without
scratch space, accepting only the clone source pod's client certificate (``<src ns>/<src>-<ns>/<claim>``).

Once the pod succeeded (or the claim goes away, or stops being a target) the Service and the pod are
deleted; the Secret, owned by the pod, goes with it. A server whose certificate is due for renewal exits
with ``deadlinePassed`` in its termination message: its pod is deleted and a fresh one made.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kubevirt.cdi_controller import meta, podstate, tlsprofile
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.importerpod import scratch_volume_claim
from kubevirt.cdi_controller.scratch import ensure_scratch
from kubevirt.cdi_controller.uploadcerts import ServerCertIssuer, cert_config
from kubevirt.cdi_controller.uploadpod import (
    UploadPodArgs,
    UploadSettings,
    cert_secret,
    service_name_of,
    upload_pod,
    upload_pod_name,
    upload_scratch_name,
    upload_service,
)
from kubevirt.cdi_controller.workerpod import (
    active_cdi,
    delete_pod,
    pods_using,
    record_start_failure,
    should_delete_pod,
)
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, AlreadyExistsError, ApiError, EventSink, KubeApi
from kubevirt.client.errors import NotFoundError
from kubevirt.client.resources import SECRETS, SERVICES
from kubevirt.controller import RequeueAfter
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import Annotation, Upload
from kubevirt_api.view import JSON

POLL_SECONDS = 2.0
UPLOAD_SUCCEEDED = "UploadSucceeded"  # the claim's event (the DataVolume has its own)
UPLOAD_SUCCESSFUL = "Upload Successful"
UPLOAD_TARGET_IN_USE = "UploadTargetInUse"
_log = get_logger()


class UploadError(Exception):
    """A claim the upload controller refuses (retried with backoff, as CDI returns an error)."""


def upload_complete(pvc: Mapping[str, Any]) -> bool:
    return meta.annotations_of(pvc).get(Annotation.POD_PHASE) == "Succeeded"


def is_upload_target(pvc: Mapping[str, Any]) -> bool:
    return Annotation.UPLOAD_TARGET in meta.annotations_of(pvc)


def is_clone_target(pvc: Mapping[str, Any]) -> bool:
    return Annotation.CLONE_REQUEST in meta.annotations_of(pvc)


def clone_client_name(pvc: Mapping[str, Any]) -> str:
    """The name the clone source pod's certificate carries: ``<src ns>/<src>-<ns>/<claim>``."""
    source = meta.annotations_of(pvc).get(Annotation.CLONE_REQUEST, "")
    return f"{source}-{meta.namespace(pvc)}/{meta.name(pvc)}"


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Every container ready (and there is one): what the readiness probe on /healthz says."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all(status.get("ready") for status in statuses)


def is_upload_pod(pod: Mapping[str, Any]) -> bool:
    return Upload.TARGET_LABEL in meta.labels_of(pod) or Upload.POD_CREATED_BY_UPLOAD in meta.annotations_of(
        pod
    )


class UploadController:
    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        caches: Caches,
        settings: UploadSettings,
        issuer: ServerCertIssuer,
    ) -> None:
        self._api = api
        self._events = events
        self._caches = caches
        self._settings = settings
        self._issuer = issuer

    def reconcile(self, key: str) -> None:
        pvc = self._caches.pvcs.get_by_key(key)
        if pvc is None:
            return
        if is_upload_target(pvc) and is_clone_target(pvc):
            raise UploadError("PVC has both clone and upload annotations")
        if not self.should_handle(pvc) or upload_complete(pvc) or meta.deleting(pvc):
            self._cleanup(pvc)
            return
        self._reconcile_claim(meta.editable(pvc))

    def should_handle(self, pvc: Mapping[str, Any]) -> bool:
        if not (is_upload_target(pvc) or is_clone_target(pvc)):
            return False
        honour_wffc = (
            Annotation.IMMEDIATE_BINDING not in meta.annotations_of(pvc)
            and self._caches.honor_wait_for_first_consumer()
        )
        return not honour_wffc or meta.claim_phase(pvc) == meta.CLAIM_BOUND

    # Cleanup: from the caches, so that claims with nothing to clean cost no API call.

    def _cleanup(self, pvc: Mapping[str, Any]) -> None:
        name = upload_pod_name(pvc)
        namespace = meta.namespace(pvc)
        service = self._caches.services.get_by_key(f"{namespace}/{service_name_of(name)}")
        if service is not None and meta.controlled_by(service, meta.uid(pvc)) and not meta.deleting(service):
            with contextlib.suppress(NotFoundError):
                self._api.delete(SERVICES, namespace, meta.name(service), uid=meta.uid(service))
        pod = self._caches.pods.get_by_key(f"{namespace}/{name}")
        if (
            pod is not None
            and meta.controlled_by(pod, meta.uid(pvc))
            and not meta.deleting(pod)
            and should_delete_pod(pvc)
        ):
            delete_pod(self._api, pod)

    # The pod, its Secret and Service.

    def _reconcile_claim(self, pvc: JSON) -> None:
        before = meta.editable(pvc)
        pod = self._upload_pod(pvc)
        if pod is None:
            users = pods_using(self._caches, pvc)
            if users:
                for user in users:
                    self._events.event(
                        pvc,
                        "Warning",
                        UPLOAD_TARGET_IN_USE,
                        f"pod {meta.key(user)} using PersistentVolumeClaim {meta.name(pvc)}",
                    )
                raise RequeueAfter(POLL_SECONDS)
            annotations = pvc["metadata"]["annotations"]
            if Annotation.UPLOAD_POD_NAME not in annotations:
                # First pass: the pod's name is recorded, the pod made on the next one.
                annotations[Annotation.UPLOAD_POD_NAME] = upload_pod_name(pvc)
                if is_clone_target(pvc):
                    annotations[Upload.CLIENT_NAME_ANNOTATION] = clone_client_name(pvc)
                self._api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), pvc)
                return
            pod = self._create_pod(pvc, annotations[Annotation.UPLOAD_POD_NAME])
            if pod is None:
                return
        if scratch_volume_claim(pod) is not None:
            ensure_scratch(self._api, self._events, self._caches, pvc, pod, owned=True)
        self._ensure_service(pvc, service_name_of(meta.name(pod)))
        self._follow_pod(pvc, pod)
        if pvc != before:
            updated = self._api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), pvc)
            if upload_complete(updated) and not is_clone_target(updated):
                # A clone's success is the clone controller's to announce.
                self._events.event(updated, "Normal", UPLOAD_SUCCEEDED, UPLOAD_SUCCESSFUL)

    def _upload_pod(self, pvc: JSON) -> JSON | None:
        name = upload_pod_name(pvc)
        pod = self._caches.pods.get_by_key(f"{meta.namespace(pvc)}/{name}")
        if pod is None:
            return None
        if not meta.controlled_by(pod, meta.uid(pvc)):
            raise ApiError(409, "Conflict", f"{name} pod not controlled by pvc {meta.name(pvc)}")
        return pod

    def _create_pod(self, pvc: JSON, name: str) -> JSON | None:
        """The new pod, then its Secret; None when an earlier pass made it (the cache lags)."""
        namespace = meta.namespace(pvc)
        tls = self._issuer.issue(namespace, service_name_of(name), cert_config(active_cdi(self._caches)))
        profile = ((self._caches.config() or {}).get("spec") or {}).get("tlsSecurityProfile")
        ciphers, min_version = tlsprofile.ciphers_and_min_version(profile)
        clone = is_clone_target(pvc)
        args = UploadPodArgs(
            name=name,
            client_name=clone_client_name(pvc) if clone else Upload.CLIENT_NAME,
            ciphers=ciphers,
            min_tls_version=min_version,
            deadline=tls.deadline,
            scratch=None if clone else upload_scratch_name(pvc),
        )
        body = upload_pod(pvc, self._settings, self._caches, args)
        try:
            pod = self._api.create(PODS, namespace, body)
        except AlreadyExistsError:
            return None
        except ApiError as err:
            record_start_failure(self._api, self._events, pvc, name, err)
            raise
        _log.info("upload pod created", pod=name, namespace=namespace, image=self._settings.image)
        if meta.pod_phase(pod) != "Running":
            try:
                self._api.create(SECRETS, namespace, cert_secret(pod, tls))
            except AlreadyExistsError:
                pass
            except ApiError:
                # A pod without its Secret never starts, and a later pass would not make the Secret.
                delete_pod(self._api, pod)
                raise
        return pod

    def _ensure_service(self, pvc: JSON, name: str) -> None:
        namespace = meta.namespace(pvc)
        service = self._caches.services.get_by_key(f"{namespace}/{name}")
        if service is None:
            try:
                service = self._api.create(SERVICES, namespace, upload_service(name, pvc))
            except AlreadyExistsError:
                service = self._api.get(SERVICES, namespace, name)
        if not meta.controlled_by(service, meta.uid(pvc)):
            raise ApiError(409, "Conflict", f"{name} service not controlled by pvc {meta.name(pvc)}")

    def _follow_pod(self, pvc: JSON, pod: Mapping[str, Any]) -> None:
        """The pod's state onto the claim's annotations (the caller writes the claim)."""
        annotations: dict[str, str] = pvc["metadata"]["annotations"]
        message = podstate.termination_message(pod)
        if message is not None and message.deadline_passed:
            if not meta.deleting(pod):
                delete_pod(self._api, pod)
            annotations[Annotation.POD_PHASE] = ""
            annotations[Annotation.POD_READY] = "false"
        else:
            annotations[Annotation.POD_PHASE] = meta.pod_phase(pod)
            annotations[Annotation.POD_READY] = "true" if pod_ready(pod) else "false"
        podstate.annotations_from_pod(annotations, pod, message)
