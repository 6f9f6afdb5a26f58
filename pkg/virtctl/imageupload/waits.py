"""The waits around the transfer, polled every 2 s as KubeVirt's virtctl polls them.

Before: the upload server must be ready, told by the PVC's ``storage.pod.ready`` annotation (``pvc``) or
by the DataVolume's ``UploadReady`` phase (``dv``), within ``--wait-secs``. Meanwhile a
``ProvisioningFailed`` event on the PVC or an ``ErrClaimNotValid`` event on the DataVolume ends the wait
with its message. After: the upload pod's phase (on the PVC) must reach ``Succeeded``.
"""

from __future__ import annotations

from collections.abc import Callable

from kubevirt.client import EVENTS, JSON, PERSISTENT_VOLUME_CLAIMS, KubeApi, NotFoundError
from kubevirt.client.resources import DATA_VOLUMES, Resource
from kubevirt.virtctl.imageupload.flags import UploadError, UploadInfo
from kubevirt.virtctl.vmexport.exports import poll
from kubevirt.virtctl.vmexport.printer import Printer
from kubevirt_api.cdi.constants import Annotation, Phase

WAIT_INTERVAL = 2.0
PROCESSING_TIMEOUT = 24 * 3600.0
PROVISIONING_FAILED = "ProvisioningFailed"
CLAIM_NOT_VALID = "ErrClaimNotValid"
# A stale write inside the provisioner, retried by it: not a failure worth reporting.
OPTIMISTIC_LOCK = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
POD_SUCCEEDED = "Succeeded"

Sleep = Callable[[float], None]


def _uid(api: KubeApi, resource: Resource, namespace: str, name: str) -> str:
    """The object's uid, ``""`` when there is no such object (or no name)."""
    if not name:
        return ""
    try:
        obj = api.get(resource, namespace, name)
    except NotFoundError:
        return ""
    return str((obj.get("metadata") or {}).get("uid") or "")


def check_events(api: KubeApi, namespace: str, pvc_name: str, dv_name: str) -> None:
    """Fails with the message of a provisioning failure or an invalid claim reported in events."""
    events, _ = api.list(EVENTS, namespace)
    pvc_uid = _uid(api, PERSISTENT_VOLUME_CLAIMS, namespace, pvc_name)
    dv_uid = _uid(api, DATA_VOLUMES, namespace, dv_name)
    for event in events:
        involved = event.get("involvedObject") or {}
        kind, uid = involved.get("kind"), involved.get("uid") or ""
        reason, message = event.get("reason"), str(event.get("message") or "")
        provisioning_failed = reason == PROVISIONING_FAILED and OPTIMISTIC_LOCK not in message
        if kind == "PersistentVolumeClaim" and uid == pvc_uid and provisioning_failed:
            raise UploadError(f"Provisioning failed: {message}")
        if kind == "DataVolume" and uid == dv_uid and reason == CLAIM_NOT_VALID:
            raise UploadError(f"Claim not valid: {message}")


class _ReadyWatch:
    """Watches a wait for the upload pod: says once that it waits, and once more when the wait is over;
    meanwhile a failure reported in events ends the wait."""

    def __init__(self, api: KubeApi, printer: Printer, info: UploadInfo) -> None:
        self.api = api
        self.printer = printer
        self.info = info
        self.logged = False

    def observe(self, done: bool, pvc_name: str) -> bool:
        """``done``, after saying so or checking ``pvc_name``'s and the DataVolume's events."""
        if done:
            if self.logged:
                self.printer.say("Pod now ready\n")
            return True
        check_events(self.api, self.info.namespace, pvc_name, self.info.name)
        if not self.logged:
            self.printer.say(f"Waiting for PVC {self.info.name} upload pod to be ready...\n")
            self.logged = True
        return False


def wait_upload_server_ready(api: KubeApi, info: UploadInfo, printer: Printer, sleep: Sleep) -> None:
    """Until the PVC says its upload server pod is ready."""
    watch = _ReadyWatch(api, printer, info)

    def ready() -> bool:
        try:
            pvc = api.get(PERSISTENT_VOLUME_CLAIMS, info.namespace, info.name)
        except NotFoundError:
            return False  # the DataVolume controller may not have made it yet
        annotations: dict[str, str] = (pvc.get("metadata") or {}).get("annotations") or {}
        return watch.observe(_go_bool(annotations.get(Annotation.POD_READY, "")), info.name)

    poll(ready, WAIT_INTERVAL, float(info.wait_secs), sleep=sleep)


def wait_data_volume_ready(api: KubeApi, info: UploadInfo, printer: Printer, sleep: Sleep) -> None:
    """Until the DataVolume is ``UploadReady``; one waiting for its consumer (or population) fails
    unless ``--force-bind``."""
    watch = _ReadyWatch(api, printer, info)

    def ready() -> bool:
        try:
            dv = api.get(DATA_VOLUMES, info.namespace, info.name)
        except NotFoundError:
            printer.say(f"DV {info.name} not found... \n")
            return False
        status: JSON = dv.get("status") or {}
        phase = str(status.get("phase") or "")
        if phase in (Phase.WAIT_FOR_FIRST_CONSUMER, Phase.PENDING_POPULATION) and not info.force_bind:
            raise UploadError(
                f"cannot upload to DataVolume in {phase} phase, make sure the PVC is Bound, "
                "or use force-bind flag"
            )
        return watch.observe(phase == Phase.UPLOAD_READY, str(status.get("claimName") or ""))

    poll(ready, WAIT_INTERVAL, float(info.wait_secs), sleep=sleep)


def wait_processing_complete(api: KubeApi, info: UploadInfo, printer: Printer, sleep: Sleep) -> None:
    """Until the upload pod (as the PVC tells) has succeeded; a failed read of the PVC ends the wait."""

    def succeeded() -> bool:
        pvc = api.get(PERSISTENT_VOLUME_CLAIMS, info.namespace, info.name)
        annotations: dict[str, str] = (pvc.get("metadata") or {}).get("annotations") or {}
        done = annotations.get(Annotation.POD_PHASE) == POD_SUCCEEDED
        if done:
            printer.say("Processing completed successfully\n")
        return done

    poll(succeeded, WAIT_INTERVAL, PROCESSING_TIMEOUT, sleep=sleep)


def _go_bool(text: str) -> bool:
    """``strconv.ParseBool``, anything it refuses reading as false."""
    return text in ("1", "t", "T", "TRUE", "true", "True")
