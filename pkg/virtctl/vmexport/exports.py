"""The VirtualMachineExport object and its token secret: create, delete, wait until ready, read the token.

``create`` writes the export with ``spec.tokenSecretRef: secret-<name>`` and then that secret (a random
20-character token under ``token``, owned by the export so it goes with it), as KubeVirt's virtctl does.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Callable
from typing import Any

from kubevirt.client import JSON, AlreadyExistsError, KubeApi, KubeReader, NotFoundError
from kubevirt.client.resources import SECRETS, VIRTUAL_MACHINE_EXPORTS
from kubevirt.export.token import TOKEN_SECRET_KEY, new_token
from kubevirt.service.durations import format_go_duration
from kubevirt.virtctl.vmexport.flags import VMExportError, VMExportInfo
from kubevirt.virtctl.vmexport.printer import Printer
from kubevirt_api.export.v1beta1.types import PHASE_READY

PROCESSING_WAIT_INTERVAL = 2.0
DEADLINE_EXCEEDED = "context deadline exceeded"
# client-go refuses a Get without a name before sending it.
EMPTY_NAME = "resource name may not be empty"


def token_secret_name(export_name: str) -> str:
    return f"secret-{export_name}"


def get_export(api: KubeReader, info: VMExportInfo) -> JSON | None:
    """The export, or None when there is none of that name."""
    try:
        return api.get(VIRTUAL_MACHINE_EXPORTS, info.namespace, info.name)
    except NotFoundError:
        return None


def export_body(info: VMExportInfo) -> JSON:
    metadata: JSON = {"name": info.name, "namespace": info.namespace}
    if info.labels:
        metadata["labels"] = dict(info.labels)
    if info.annotations:
        metadata["annotations"] = dict(info.annotations)
    spec: JSON = {"tokenSecretRef": token_secret_name(info.name), "source": dict(info.source)}
    if info.ttl_nanoseconds > 0:
        spec["ttlDuration"] = format_go_duration(info.ttl_nanoseconds)
    return {
        "apiVersion": VIRTUAL_MACHINE_EXPORTS.api_version,
        "kind": VIRTUAL_MACHINE_EXPORTS.kind,
        "metadata": metadata,
        "spec": spec,
    }


def token_secret_body(export: JSON) -> JSON:
    metadata = export["metadata"]
    owner = {
        "apiVersion": VIRTUAL_MACHINE_EXPORTS.api_version,
        "kind": VIRTUAL_MACHINE_EXPORTS.kind,
        "name": metadata["name"],
        "uid": metadata.get("uid", ""),
        "controller": True,
        # Blocking the owner's deletion needs more RBAC on some distributions, and is not needed.
        "blockOwnerDeletion": False,
    }
    token = base64.b64encode(new_token().encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": token_secret_name(metadata["name"]),
            "namespace": metadata.get("namespace", ""),
            "ownerReferences": [owner],
        },
        "type": "Opaque",
        "data": {TOKEN_SECRET_KEY: token},
    }


def create_export(api: KubeApi, info: VMExportInfo, printer: Printer) -> None:
    if get_export(api, info) is not None:
        raise VMExportError(f"VirtualMachineExport '{info.namespace}/{info.name}' already exists")
    created = api.create(VIRTUAL_MACHINE_EXPORTS, info.namespace, export_body(info))
    with contextlib.suppress(AlreadyExistsError):
        api.create(SECRETS, info.namespace, token_secret_body(created))
    printer.say(f"VirtualMachineExport '{info.namespace}/{info.name}' created succesfully\n")


def delete_export(api: KubeApi, info: VMExportInfo, printer: Printer) -> None:
    try:
        api.delete(VIRTUAL_MACHINE_EXPORTS, info.namespace, info.name)
    except NotFoundError:
        printer.say(f"VirtualMachineExport '{info.namespace}/{info.name}' does not exist\n")
        return
    printer.say(f"VirtualMachineExport '{info.namespace}/{info.name}' deleted succesfully\n")


def export_token(api: KubeReader, export: JSON) -> str:
    """The token in the secret that ``status.tokenSecretRef`` names."""
    name = str((export.get("status") or {}).get("tokenSecretRef") or "")
    if not name:
        raise VMExportError(EMPTY_NAME)
    secret = api.get(SECRETS, export["metadata"].get("namespace") or None, name)
    encoded = (secret.get("data") or {}).get(TOKEN_SECRET_KEY) or ""
    return base64.b64decode(encoded).decode(errors="replace")


def links(export: JSON) -> JSON:
    return ((export.get("status") or {}).get("links")) or {}


def link_side(info: VMExportInfo) -> str:
    """The side of the links a download uses: internal behind a service URL (or port-forward)."""
    return "internal" if info.service_url else "external"


def poll(
    condition: Callable[[], bool],
    interval: float,
    timeout: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """apimachinery's ``PollUntilContextTimeout`` with ``immediate``: the condition now, then every
    ``interval`` until it holds or the deadline passes."""
    deadline = clock() + timeout
    if condition():
        return
    while True:
        remaining = deadline - clock()
        if remaining <= interval:
            sleep(max(remaining, 0.0))
            raise VMExportError(DEADLINE_EXCEEDED)
        sleep(interval)
        if condition():
            return


def wait_until_ready(
    api: KubeReader, info: VMExportInfo, printer: Printer, *, sleep: Callable[[float], None] = time.sleep
) -> None:
    """Until the export is ``Ready`` with the links the download will use: internal ones behind a service
    URL (or port-forward), external ones otherwise."""

    def ready() -> bool:
        export = get_export(api, info)
        if export is None:
            printer.say(f"couldn't get VM Export {info.name}, waiting for it to be created...\n")
            return False
        status: dict[str, Any] | None = export.get("status")
        if status is None:
            return False
        if status.get("phase") != PHASE_READY:
            printer.say(f"waiting for VM Export {info.name} status to be ready...\n")
            return False
        side = link_side(info)
        if links(export).get(side) is None:
            printer.say(f"waiting for VM Export {info.name} {side} links to be available...\n")
            return False
        return True

    poll(ready, PROCESSING_WAIT_INTERVAL, info.readiness_timeout, sleep=sleep)
