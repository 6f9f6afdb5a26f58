"""The clone controller (CDI's PVC-level CloneReconciler, host-assisted): for a bound target claim carrying
``k8s.io/CloneRequest``, once its upload server (made by the upload controller in clone mode) is ready, it
checks the clone is allowed (same namespace, or a token for exactly this clone), then runs the source pod
and its client-certificate Secret in the source namespace. When the upload server has succeeded the claim
is marked ``k8s.io/CloneOf`` and the source pod goes; the claim's finalizer keeps it until then, so a
deleted target never leaves a source pod reading another namespace's data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.clonepod import client_secret, clone_request, source_pod, source_pod_name
from kubevirt.cdi_controller.clonetoken import CloneTokenError, SigningKey, check_claim
from kubevirt.cdi_controller.importerpod import owner_uid
from kubevirt.cdi_controller.upload import clone_client_name, is_clone_target
from kubevirt.cdi_controller.uploadcerts import ServerCertIssuer, cert_config
from kubevirt.cdi_controller.workerpod import WorkerImage, active_cdi, delete_pod
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, AlreadyExistsError, ApiError, EventSink, KubeApi
from kubevirt.client.errors import NotFoundError
from kubevirt.client.resources import SECRETS
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import Annotation, Clone, Reason

_log = get_logger()


class CloneError(Exception):
    """A clone that cannot go on now (retried with backoff, as CDI returns an error)."""


def clone_done(pvc: Mapping[str, Any]) -> bool:
    return Annotation.CLONE_OF in meta.annotations_of(pvc)


def target_key_of_source_pod(pod: Mapping[str, Any]) -> str | None:
    """The target claim a clone source pod works for (its ``storage.ownerRef``)."""
    if Clone.UNIQUE_ID_LABEL not in meta.labels_of(pod):
        return None
    return meta.annotations_of(pod).get(Annotation.OWNER_REF) or None


class CloneController:
    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        caches: Caches,
        settings: WorkerImage,
        issuer: ServerCertIssuer,
        signing_key: SigningKey,
    ) -> None:
        self._api = api
        self._events = events
        self._caches = caches
        self._settings = settings
        self._issuer = issuer
        self._signing_key = signing_key

    def reconcile(self, key: str) -> None:
        pvc = self._caches.pvcs.get_by_key(key)
        if pvc is None:
            return
        if meta.deleting(pvc) or not self._should_run(pvc):
            if Clone.SOURCE_POD_FINALIZER in meta.meta(pvc).get("finalizers", ()) or meta.deleting(pvc):
                self._cleanup(pvc)
            return
        annotations = meta.annotations_of(pvc)
        if annotations.get(Annotation.POD_PHASE) == "Succeeded":
            self._finish(pvc)
            return
        if annotations.get(Annotation.POD_READY) != "true":
            return  # the upload server is not ready yet; its pod's changes bring the claim back
        if Annotation.CLONE_SOURCE_POD not in annotations:
            updated = meta.editable(pvc)
            updated["metadata"]["annotations"][Annotation.CLONE_SOURCE_POD] = source_pod_name(pvc)
            finalizers = updated["metadata"].setdefault("finalizers", [])
            if Clone.SOURCE_POD_FINALIZER not in finalizers:
                finalizers.append(Clone.SOURCE_POD_FINALIZER)
            self._api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), updated)
            return
        self._ensure_source_pod(pvc)

    def _should_run(self, pvc: Mapping[str, Any]) -> bool:
        if not is_clone_target(pvc) or clone_done(pvc):
            return False
        honour_wffc = (
            Annotation.IMMEDIATE_BINDING not in meta.annotations_of(pvc)
            and self._caches.honor_wait_for_first_consumer()
        )
        return not honour_wffc or meta.claim_phase(pvc) == meta.CLAIM_BOUND

    def _source(self, pvc: Mapping[str, Any]) -> tuple[tuple[str, str], Mapping[str, Any]]:
        request = clone_request(pvc)
        if request is None:
            raise CloneError(f"claim {meta.key(pvc)}: malformed {Annotation.CLONE_REQUEST} annotation")
        source = self._caches.pvcs.get_by_key(f"{request[0]}/{request[1]}")
        if source is None:
            raise CloneError(f"clone source PVC {request[0]}/{request[1]} not found")
        return request, source

    def _ensure_source_pod(self, pvc: Mapping[str, Any]) -> None:
        request, source = self._source(pvc)
        name = source_pod_name(pvc)
        existing = self._caches.pods.get_by_key(f"{request[0]}/{name}")
        if existing is not None:
            return
        try:
            check_claim(request, pvc, owner_uid(pvc), self._signing_key)
        except CloneTokenError as err:
            message = Clone.MESSAGE_VALIDATION_FAILED % err
            self._events.event(pvc, "Warning", Reason.CLONE_VALIDATION_FAILED, message)
            raise CloneError(message) from err
        tls = self._issuer.issue_client(clone_client_name(pvc), cert_config(active_cdi(self._caches)))
        body = source_pod(pvc, source, self._settings, self._caches, tls.server_ca_pem)
        try:
            pod = self._api.create(PODS, request[0], body)
        except AlreadyExistsError:
            return
        _log.info("clone source pod created", pod=name, namespace=request[0], target=meta.key(pvc))
        try:
            self._api.create(SECRETS, request[0], client_secret(pod, tls))
        except AlreadyExistsError:
            pass
        except ApiError:
            delete_pod(self._api, pod)  # it would wait for its Secret forever
            raise

    def _finish(self, pvc: Mapping[str, Any]) -> None:
        updated = meta.editable(pvc)
        updated["metadata"]["annotations"][Annotation.CLONE_OF] = "true"
        written = self._api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), updated)
        request = clone_request(pvc)
        if request is not None:
            names = (*request, meta.namespace(pvc), meta.name(pvc))
            self._events.event(written, "Normal", Reason.CLONE_SUCCEEDED, Clone.MESSAGE_SUCCEEDED % names)
        self._cleanup(written)

    def _cleanup(self, pvc: Mapping[str, Any]) -> None:
        """The source pod goes (its Secret with it), then the finalizer."""
        request = clone_request(pvc)
        if request is not None:
            pod = self._caches.pods.get_by_key(f"{request[0]}/{source_pod_name(pvc)}")
            if pod is not None and not meta.deleting(pod):
                delete_pod(self._api, pod)
        finalizers = list(meta.meta(pvc).get("finalizers") or ())
        if Clone.SOURCE_POD_FINALIZER not in finalizers:
            return
        updated = meta.editable(pvc)
        updated["metadata"]["finalizers"] = [f for f in finalizers if f != Clone.SOURCE_POD_FINALIZER]
        with contextlib.suppress(NotFoundError):
            self._api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), updated)
