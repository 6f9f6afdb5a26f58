"""The DataVolume controller for import, blank, upload and ``pvc`` (host-assisted clone) sources, as CDI
v1.63's on its annotation-driven path: it renders and creates the DataVolume's claim (recording
``storage.usePopulator: "false"`` on the DataVolume) and derives the DataVolume's status from the claim
and the annotations the import, upload and clone controllers keep on it. Sources not handled yet
(snapshot clones, s3, gcs, imageio, vddk) leave the DataVolume Pending with a Warning event saying so.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubevirt.cdi_controller import clonesource, conditions, meta, progress
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.clonetoken import CloneTokenError, SigningKey, extended_token, is_cross_namespace
from kubevirt.cdi_controller.conditions import Now
from kubevirt.cdi_controller.importerpod import owner_uid
from kubevirt.cdi_controller.render import ClaimNotValid, new_claim, render_claim_spec
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, ApiError, EventSink, KubeApi
from kubevirt.client.resources import DATA_VOLUMES
from kubevirt.controller import RequeueAfter
from kubevirt.controller.store import OWNER_INDEX
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.cdi.constants import Annotation, Clone, Phase, Reason
from kubevirt_api.view import JSON

IMPORT_SOURCES = ("http", "registry", "blank")
UPLOAD_SOURCE = "upload"
CLONE_SOURCE = clonesource.SOURCE_KIND
SUPPORTED_SOURCES = (*IMPORT_SOURCES, UPLOAD_SOURCE, CLONE_SOURCE)
UNSUPPORTED_SOURCES = ("snapshot", "s3", "gcs", "imageio", "vddk")
# The order CDI looks at a source's kinds in (the first one set wins).
_SOURCE_ORDER = (UPLOAD_SOURCE, "pvc", "snapshot", *IMPORT_SOURCES, "s3", "gcs", "imageio", "vddk")
UNSUPPORTED_SOURCE = "UnsupportedSource"
UNSUPPORTED_MESSAGE = "DataVolume source %s is not supported by this DataVolume importer yet"
RESOURCE_EXISTS = 'Resource "%s" already exists and is not managed by DataVolume'
MARKED_FOR_DELETION = 'Resource "%s" marked for deletion'
CLAIM_LOST = "PVC %s lost"
CLAIM_ADOPTION_GATE = "DataVolumeClaimAdoption"
PROGRESS_POLL_SECONDS = 2.0
CONFIG_WAIT_SECONDS = 1.0
_IMPORT_EVENTS = {
    "Pending": (Phase.IMPORT_SCHEDULED, "Normal", Reason.IMPORT_SCHEDULED, "Import into %s scheduled"),
    "Running": (Phase.IMPORT_IN_PROGRESS, "Normal", Reason.IMPORT_IN_PROGRESS, "Import into %s in progress"),
    "Failed": (Phase.IMPORT_SCHEDULED, "Warning", Reason.IMPORT_FAILED, "Failed to import into PVC %s"),
    "Succeeded": (Phase.SUCCEEDED, "Normal", Reason.IMPORT_SUCCEEDED, "Successfully imported into PVC %s"),
}
# The upload server pod's phase (Running only once ready) → the DataVolume's phase and event; a failed
# pod leaves the DataVolume UploadScheduled.
_UPLOAD_EVENTS = {
    "Pending": (Phase.UPLOAD_SCHEDULED, "Normal", Reason.UPLOAD_SCHEDULED, "Upload into %s scheduled"),
    "Running": (Phase.UPLOAD_READY, "Normal", Reason.UPLOAD_READY, "Upload into %s ready"),
    "Failed": (Phase.UPLOAD_SCHEDULED, "Warning", Reason.UPLOAD_FAILED, "Upload into %s failed"),
    "Succeeded": (Phase.SUCCEEDED, "Normal", Reason.UPLOAD_SUCCEEDED, "Successfully uploaded into %s"),
}


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class PhaseSync:
    """A phase the sync decided (an invalid claim, a refused source), written with its event;
    ``explains_claim``: the event's reason and message also explain the missing claim (Bound)."""

    phase: str
    event: Event
    explains_claim: bool = True


@dataclass
class _State:
    dv: JSON
    pvc: Mapping[str, Any] | None
    phase_sync: PhaseSync | None = None
    requeue: float | None = None
    errors: list[Exception] = field(default_factory=list)


def source_kind(dv: Mapping[str, Any]) -> str | None:
    """The DataVolume's source kind (``sourceRef`` for a DataSource reference), None without one."""
    spec = dv.get("spec") or {}
    if spec.get("sourceRef") is not None:
        return "sourceRef"
    source = spec.get("source") or {}
    for kind in _SOURCE_ORDER:
        if source.get(kind) is not None:
            return kind
    return None


class DataVolumeController:
    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        caches: Caches,
        fetch_metrics: progress.Fetch,
        signing_key: SigningKey | None = None,
        now: Now = utc_now,
    ) -> None:
        self._signing_key = signing_key
        self._api = api
        self._events = events
        self._caches = caches
        self._fetch = fetch_metrics
        self._now = now

    def reconcile(self, key: str) -> None:
        dv = self._caches.data_volumes.get_by_key(key)
        if dv is None or source_kind(dv) is None:
            return  # nothing to import: no controller of CDI's takes such a DataVolume
        state = _State(dv=copy.deepcopy(dict(dv)), pvc=self._caches.pvcs.get_by_key(key))
        try:
            self._sync(state)
        except ClaimNotValid as err:
            if err.retry:
                state.errors.append(err)
        except ApiError as err:
            state.errors.append(err)
        self._update_status(state)
        if state.errors:
            raise state.errors[0]
        if state.requeue is not None:
            raise RequeueAfter(state.requeue)

    # Sync: the claim and the DataVolume's metadata.

    def _sync(self, state: _State) -> None:
        dv = state.dv
        if meta.deleting(dv):
            return
        kind = source_kind(dv)
        if kind not in SUPPORTED_SOURCES:
            event = Event("Warning", UNSUPPORTED_SOURCE, UNSUPPORTED_MESSAGE % kind)
            state.phase_sync = PhaseSync(Phase.PENDING, event, explains_claim=False)
            return
        claim_spec = None
        if state.pvc is None and not self._caches.config_status().get("filesystemOverhead"):
            # Claims are sized with CDIConfig's overhead: wait for the config controller's first pass.
            state.requeue = CONFIG_WAIT_SECONDS
            return
        clone_source = None
        if state.pvc is None and kind == CLONE_SOURCE and not self._prepopulated(dv):
            clone_source = self._clone_source(state)
            if clone_source is None:
                return
        if state.pvc is None:
            rendered_from = (clonesource.size_from_source(dv, clone_source) if clone_source else None) or dv
            try:
                claim_spec = render_claim_spec(rendered_from, self._caches, self._events)
            except ClaimNotValid as err:
                state.phase_sync = PhaseSync(Phase.UNSET, Event("Warning", Reason.CLAIM_NOT_VALID, str(err)))
                raise
        if clone_source is not None and claim_spec is not None:
            problem = clonesource.incompatibility(clone_source, dv, claim_spec)
            if problem is not None:
                event = Event(
                    "Warning", Reason.CLONE_VALIDATION_FAILED, Clone.MESSAGE_VALIDATION_FAILED % problem
                )
                state.phase_sync = PhaseSync(Phase.PENDING, event, explains_claim=False)
                return
        updated = meta.editable(dv)
        # The annotation-driven path, never populators: recorded as CDI records its decision.
        updated["metadata"]["annotations"][Annotation.USE_POPULATOR] = "false"
        if clone_source is not None and is_cross_namespace(dv):
            token = self._extended_token(state)
            if token is None:
                return
            updated["metadata"]["annotations"][Annotation.EXTENDED_CLONE_TOKEN] = token
        if state.pvc is not None:
            state.pvc = self._validate_claim(dv, state.pvc)
            if meta.claim_phase(state.pvc) == meta.CLAIM_BOUND and _populated_for(state.pvc, dv):
                updated["metadata"]["annotations"][Annotation.PRE_POPULATED] = meta.name(state.pvc)
        if meta.meta(updated) != meta.meta(dv):
            state.dv = self._api.update(DATA_VOLUMES, meta.namespace(dv), updated)
        if (
            state.pvc is None
            and claim_spec is not None
            and Annotation.PRE_POPULATED not in meta.annotations_of(state.dv)
        ):
            state.pvc = self._create_claim(state, claim_spec)

    @staticmethod
    def _prepopulated(dv: Mapping[str, Any]) -> bool:
        return Annotation.PRE_POPULATED in meta.annotations_of(dv)

    def _clone_source(self, state: _State) -> Mapping[str, Any] | None:
        """The clone's source claim when the target claim may be made now; else None, with the phase
        and event that say why."""
        refusal = clonesource.refusal_before_claim(state.dv, self._caches)
        if refusal is not None:
            event = Event(refusal.event_type, refusal.reason, refusal.message)
            state.phase_sync = PhaseSync(refusal.phase, event, explains_claim=False)
            state.requeue = refusal.retry_after
            return None
        return clonesource.source_claim(state.dv, self._caches)

    def _extended_token(self, state: _State) -> str | None:
        """The controller's own token for a cross-namespace clone, from the webhook's; None (with the
        DataVolume's phase and event) when the webhook's token is missing or not for this clone."""
        try:
            if self._signing_key is None:
                raise CloneTokenError("no token signing key is configured")
            existing = meta.annotations_of(state.dv).get(Annotation.EXTENDED_CLONE_TOKEN)
            return existing or extended_token(state.dv, self._signing_key)
        except CloneTokenError as err:
            message = Clone.MESSAGE_VALIDATION_FAILED % err
            event = Event("Warning", Reason.CLONE_VALIDATION_FAILED, message)
            state.phase_sync = PhaseSync(Phase.PENDING, event, explains_claim=False)
            return None

    def _validate_claim(self, dv: Mapping[str, Any], pvc: Mapping[str, Any]) -> Mapping[str, Any]:
        name = meta.name(pvc)
        if meta.deleting(pvc):
            self._events.event(dv, "Warning", "ErrResourceMarkedForDeletion", MARKED_FOR_DELETION % name)
            raise ApiError(409, "Conflict", MARKED_FOR_DELETION % name)
        if meta.controlled_by(pvc, meta.uid(dv)):
            return pvc
        if self._requires_work(pvc, dv):
            self._events.event(dv, "Warning", Reason.RESOURCE_EXISTS, RESOURCE_EXISTS % name)
            raise ApiError(409, "Conflict", RESOURCE_EXISTS % name)
        adopted = meta.editable(pvc)
        refs = [ref for ref in adopted["metadata"].get("ownerReferences") or () if not ref.get("controller")]
        adopted["metadata"]["ownerReferences"] = [
            *refs,
            meta.owner_reference(dv, cdi.API_VERSION, "DataVolume"),
        ]
        return self._api.update(PERSISTENT_VOLUME_CLAIMS, meta.namespace(pvc), adopted)

    def _requires_work(self, pvc: Mapping[str, Any] | None, dv: Mapping[str, Any]) -> bool:
        """Whether the claim still needs filling for this DataVolume (not populated for it, not adopted)."""
        if pvc is None:
            return True
        if _populated_for(pvc, dv):
            return False
        return not self._may_adopt(pvc, dv)

    def _may_adopt(self, pvc: Mapping[str, Any], dv: Mapping[str, Any]) -> bool:
        if meta.annotations_of(pvc).get(Annotation.CREATED_FOR_DATA_VOLUME) == meta.uid(dv):
            return False
        allowed = meta.annotations_of(dv).get(Annotation.ALLOW_CLAIM_ADOPTION)
        if allowed is not None:
            return allowed.lower() in ("true", "1", "t")
        gates = ((self._caches.config() or {}).get("spec") or {}).get("featureGates") or ()
        return CLAIM_ADOPTION_GATE in gates

    def _create_claim(self, state: _State, claim_spec: Mapping[str, Any]) -> Mapping[str, Any]:
        body = new_claim(state.dv, claim_spec, self._caches)
        if source_kind(state.dv) == CLONE_SOURCE:
            token = meta.annotations_of(state.dv).get(Annotation.EXTENDED_CLONE_TOKEN)
            body["metadata"]["annotations"].update(clonesource.claim_annotations(state.dv, token))
        try:
            return self._api.create(PERSISTENT_VOLUME_CLAIMS, meta.namespace(state.dv), body)
        except ApiError as err:
            if "exceeded quota" in str(err):
                event = Event("Warning", Reason.EXCEEDED_QUOTA, str(err))
                state.phase_sync = PhaseSync(Phase.PENDING, event)
            raise

    # Status.

    def _update_status(self, state: _State) -> None:
        dv = state.dv
        new = copy.deepcopy(dv)
        status: JSON = new.setdefault("status", {})
        original = copy.deepcopy(list((dv.get("status") or {}).get("conditions") or []))
        current_phase = status.get("phase", "")
        if state.phase_sync is not None:
            sync = state.phase_sync
            status["phase"] = sync.phase
            reason, message = (sync.event.reason, sync.event.message) if sync.explains_claim else ("", "")
            conditions.update_conditions(status, None, reason, message, self._now)
            self._write_status(dv, new, current_phase, original, sync.event)
            return
        pvc = state.pvc
        event: Event | None = None
        if pvc is None:
            if Annotation.PRE_POPULATED in meta.annotations_of(dv) or status.get("phase", "") == Phase.UNSET:
                status["phase"] = Phase.PENDING
        else:
            status["claimName"] = meta.name(pvc)
            event = self._phase_from_claim(pvc, dv, status)
            restarts = meta.annotations_of(pvc).get(Annotation.POD_RESTARTS, "")
            if restarts.isdigit():
                status["restartCount"] = int(restarts)
            if source_kind(dv) == CLONE_SOURCE:
                # The clone's progress is not read from its source pod yet: unknown until done.
                status["progress"] = status.get("progress") or cdi.PROGRESS_UNKNOWN
            elif source_kind(dv) == UPLOAD_SOURCE:
                # An upload server reports no progress: CDI leaves it unknown, even once done.
                status["progress"] = status.get("progress") or cdi.PROGRESS_UNKNOWN
            else:
                state.requeue = self._update_progress(status, pvc)
        conditions.update_conditions(status, pvc, "", "", self._now)
        self._write_status(dv, new, current_phase, original, event)

    def _phase_from_claim(self, pvc: Mapping[str, Any], dv: Mapping[str, Any], status: JSON) -> Event | None:
        requires_work = self._requires_work(pvc, dv)
        pod_phase = meta.annotations_of(pvc).get(Annotation.POD_PHASE)
        if pod_phase == "Succeeded" and requires_work:
            return self._transfer_phase(pvc, dv, status)
        claim_phase = meta.claim_phase(pvc)
        if claim_phase == meta.CLAIM_PENDING:
            if not requires_work:
                status["phase"] = Phase.SUCCEEDED
            elif self._waits_for_first_consumer(pvc):
                status["phase"] = Phase.WAIT_FOR_FIRST_CONSUMER
            else:
                status["phase"] = Phase.PENDING
        elif claim_phase == meta.CLAIM_BOUND:
            if status.get("phase", "") in (Phase.PENDING, Phase.WAIT_FOR_FIRST_CONSUMER, Phase.UNKNOWN):
                status["phase"] = Phase.PVC_BOUND
            if requires_work:
                return self._transfer_phase(pvc, dv, status)
            status["phase"] = Phase.SUCCEEDED
        elif claim_phase == meta.CLAIM_LOST:
            status["phase"] = Phase.FAILED
            return Event("Warning", Reason.CLAIM_LOST, CLAIM_LOST % meta.name(pvc))
        elif claim_phase:
            status["phase"] = Phase.UNKNOWN
        return None

    def _transfer_phase(self, pvc: Mapping[str, Any], dv: Mapping[str, Any], status: JSON) -> Event | None:
        if source_kind(dv) == UPLOAD_SOURCE:
            return self._upload_phase(pvc, dv, status)
        if source_kind(dv) == CLONE_SOURCE:
            if not self._requires_work(pvc, dv):
                return None
            outcome = clonesource.clone_phase(pvc, dv, status)
            return Event(*outcome) if outcome is not None else None
        return self._import_phase(pvc, dv, status)

    def _upload_phase(self, pvc: Mapping[str, Any], dv: Mapping[str, Any], status: JSON) -> Event | None:
        annotations = meta.annotations_of(pvc)
        pod_phase = annotations.get(Annotation.POD_PHASE)
        if pod_phase != "Succeeded":
            target = Annotation.UPLOAD_TARGET in annotations and meta.claim_phase(pvc) == meta.CLAIM_BOUND
            if not (target and self._requires_work(pvc, dv)):
                return None
        status["phase"] = Phase.UPLOAD_SCHEDULED
        outcome = _UPLOAD_EVENTS.get(pod_phase or "")
        if outcome is None:
            return None
        if pod_phase == "Running" and annotations.get(Annotation.POD_READY) != "true":
            return None  # running, not ready yet: still scheduled
        phase, event_type, reason, message = outcome
        status["phase"] = phase
        return Event(event_type, reason, message % meta.name(pvc))

    def _import_phase(self, pvc: Mapping[str, Any], dv: Mapping[str, Any], status: JSON) -> Event | None:
        annotations = meta.annotations_of(pvc)
        pod_phase = annotations.get(Annotation.POD_PHASE)
        if pod_phase != "Succeeded":
            scheduled = (
                Annotation.IMPORT_POD_NAME in annotations and meta.claim_phase(pvc) == meta.CLAIM_BOUND
            )
            if not (scheduled and self._requires_work(pvc, dv)):
                return None
        status["phase"] = Phase.IMPORT_SCHEDULED
        outcome = _IMPORT_EVENTS.get(pod_phase or "")
        if outcome is None:
            return None
        phase, event_type, reason, message = outcome
        status["phase"] = phase
        if phase == Phase.SUCCEEDED:
            status["progress"] = cdi.PROGRESS_DONE
        return Event(event_type, reason, message % meta.name(pvc))

    def _waits_for_first_consumer(self, pvc: Mapping[str, Any]) -> bool:
        if Annotation.IMMEDIATE_BINDING in meta.annotations_of(pvc):
            return False  # the worker pod is the consumer: it does not wait for another
        storage_class = self._caches.storage_class(meta.storage_class_name(pvc.get("spec") or {}))
        wffc = (storage_class or {}).get("volumeBindingMode") == "WaitForFirstConsumer"
        return wffc and self._caches.honor_wait_for_first_consumer()

    def _update_progress(self, status: JSON, pvc: Mapping[str, Any]) -> float | None:
        """Reads the importer's progress while it runs; the seconds until the next look, if any."""
        if not status.get("progress"):
            status["progress"] = cdi.PROGRESS_UNKNOWN
        if status.get("phase") in (Phase.SUCCEEDED, Phase.FAILED):
            return None
        pod = self._worker_pod(pvc)
        if pod is not None:
            if meta.pod_phase(pod) != "Running":
                return None
            url = progress.metrics_url(pod)
            body = self._fetch(url) if url else None
            figure = progress.parse_progress(body, owner_uid(pvc)) if body else None
            text = progress.format_progress(figure) if figure else None
            if text is not None:
                status["progress"] = text
        return PROGRESS_POLL_SECONDS

    def _worker_pod(self, pvc: Mapping[str, Any]) -> Mapping[str, Any] | None:
        for pod in self._caches.pods.by_index(OWNER_INDEX, meta.uid(pvc)):
            if cdi.PROMETHEUS_LABEL in meta.labels_of(pod):
                return pod
        return None

    def _write_status(
        self,
        dv: Mapping[str, Any],
        new: JSON,
        current_phase: str,
        original: list[JSON],
        event: Event | None,
    ) -> None:
        if new.get("status") == (dv.get("status") or {}):
            return
        written = self._api.update_status(DATA_VOLUMES, meta.namespace(dv), new)
        if event is not None and current_phase != new["status"].get("phase", ""):
            self._events.event(written, event.type, event.reason, event.message)
        for event_type, reason, message in conditions.condition_events(new["status"], original):
            self._events.event(written, event_type, reason, message)


def _populated_for(pvc: Mapping[str, Any], dv: Mapping[str, Any]) -> bool:
    return meta.annotations_of(pvc).get(Annotation.POPULATED_FOR) == meta.name(dv)


def data_volume_key_of_claim(pvc: Mapping[str, Any]) -> str | None:
    """The key of the DataVolume controlling a claim."""
    for ref in meta.meta(pvc).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "DataVolume":
            return f"{meta.namespace(pvc)}/{ref.get('name')}"
    return None
