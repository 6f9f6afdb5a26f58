"""Whether a claim takes an upload now (CDI's ``uploadReady`` and ``resolveUploadPath``): it must exist, be
an upload target, not have finished, and have a ready upload server; its content type says which path of
that server receives the data.

The claim is read again every second for up to ten seconds (an upload often starts right after the claim
was made, while its server is still starting). A claim filled by the upload populator is represented by its
``PVC'``, which carries the annotations and names the upload server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kubevirt.cdi.naming import upload_server_url
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, ApiError, KubeReader, NotFoundError
from kubevirt_api.cdi.constants import CONTENT_TYPE_ARCHIVE, CONTENT_TYPE_KUBEVIRT, GROUP, Annotation, Upload
from kubevirt_api.view import JSON

POLL_INTERVAL = 1.0
POLL_TIMEOUT = 10.0
# CDI's populator names; kubevirt_api.cdi.constants has none for them yet.
PVC_PRIME_ANNOTATION = f"{GROUP}/storage.populator.pvcPrime"
UPLOAD_SOURCE_KIND = "VolumeUploadSource"
_SUCCEEDED = "Succeeded"
# Go's strconv.ParseBool: anything else is false (and an error CDI ignores).
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


class UploadNotPossibleError(Exception):
    """The claim cannot take the upload; the message is CDI's, returned to the client with a 503."""


def _annotations(claim: JSON) -> dict[str, str]:
    return (claim.get("metadata") or {}).get("annotations") or {}


def _populated_by_upload(claim: JSON) -> bool:
    ref = (claim.get("spec") or {}).get("dataSourceRef") or {}
    return ref.get("apiGroup") == GROUP and bool(ref.get("name")) and ref.get("kind") == UPLOAD_SOURCE_KIND


def _get(api: KubeReader, namespace: str, name: str) -> JSON:
    try:
        return api.get(PERSISTENT_VOLUME_CLAIMS, namespace, name)
    except NotFoundError:
        raise
    except ApiError as err:
        # Go prints a Status error as its message alone.
        raise UploadNotPossibleError(err.message or str(err)) from None


def look_at_claim(api: KubeReader, namespace: str, name: str) -> JSON | None:
    """The claim the upload goes to once its server is ready, None while it is not yet; raises
    :class:`UploadNotPossibleError` when it never will be."""
    try:
        claim = _get(api, namespace, name)
    except NotFoundError:
        raise UploadNotPossibleError(f"rejecting Upload Request for PVC {name} that doesn't exist") from None
    if _populated_by_upload(claim):
        prime = _annotations(claim).get(PVC_PRIME_ANNOTATION)
        if prime is None:
            return None  # the populator has not made PVC' yet
        try:
            claim = _get(api, namespace, prime)
        except NotFoundError:
            raise UploadNotPossibleError(
                f"rejecting Upload Request for PVC {name}, PVC' wasn't created yet"
            ) from None
    annotations = _annotations(claim)
    if Annotation.UPLOAD_TARGET not in annotations:
        target = (claim.get("metadata") or {}).get("name", name)
        raise UploadNotPossibleError(f"PVC {target} is not an upload target")
    if annotations.get(Annotation.POD_PHASE) == _SUCCEEDED:
        raise UploadNotPossibleError(
            f"rejecting Upload Request for PVC {name} that already finished uploading"
        )
    return claim if annotations.get(Annotation.POD_READY) in _TRUE else None


async def wait_until_ready(
    look: Callable[[], JSON | None], *, interval: float = POLL_INTERVAL, timeout: float = POLL_TIMEOUT
) -> JSON:
    """Calls ``look`` (in a thread: it reads the API) until it returns the claim; raises
    :class:`UploadNotPossibleError` when it refuses or ``timeout`` passes first."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                claim = await asyncio.to_thread(look)
                if claim is not None:
                    return claim
                await asyncio.sleep(interval)
    except TimeoutError:
        # What Go's poll answers when its context runs out.
        raise UploadNotPossibleError("context deadline exceeded") from None


def upload_url(claim: JSON, namespace: str, requested: str, path: str) -> str:
    """The URL of ``claim``'s upload server (read in ``namespace``) for ``path``, the path the client asked
    for: archives go to the archive endpoint of the same API version. ``requested`` is the claim the token
    named (CDI's messages use it; ``claim`` may be its PVC')."""
    content_type = _annotations(claim).get(Annotation.CONTENT_TYPE, "")
    if content_type in (CONTENT_TYPE_KUBEVIRT, ""):
        target = path
    elif content_type == CONTENT_TYPE_ARCHIVE:
        target = Upload.PATH_ARCHIVE_ALPHA if "alpha" in path else Upload.PATH_ARCHIVE
    else:
        raise UploadNotPossibleError(
            f"rejecting upload request for PVC {requested} - upload content-type {content_type} is invalid"
        )
    name = str((claim.get("metadata") or {}).get("name") or requested)
    return upload_server_url(namespace, name, target)
