"""The launcher's reading of a request's VMI: identity and lifecycle facts, checked with field paths.

Every command carries the VMI; the domain manager needs only its identity and lifecycle hints, read here
once per request from the JSON. The full typed VMI is built only when a domain is built, in the
conversion worker (:mod:`kubevirt.virt_launcher.virtwrap.domain_pipeline`), from the same JSON bytes,
which :class:`VMIFacts` keeps as ``raw``: the typed API stays out of the long-lived launcher.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from kubevirt.input_limits import load_json
from kubevirt_api.core.v1 import FINAL_VMI_PHASES, VirtualMachineInstancePhase
from kubevirt_api.core.v1.constants import DEPRECATED_NON_ROOT_VMI_ANNOTATION

DEFAULT_GRACE_PERIOD_SECONDS = 30
# The UID names directories and goes into a libvirt URI: letters, digits and inner '-', '_', '.' only
# (what the API server assigns is a UUID).
_UID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,126}[A-Za-z0-9])?")


class InvalidVMIError(ValueError):
    """The request carried no usable VMI."""


@dataclasses.dataclass(frozen=True)
class VMIFacts:
    name: str
    namespace: str
    uid: str
    phase: str
    start_paused: bool
    grace_period_seconds: int
    migration_uid: str
    migration_target_pod: str = ""
    # KubeVirt's test: the VMI's pods run as a non-root user (status.runtimeUser, or the old annotation).
    non_root: bool = False
    raw: bytes = dataclasses.field(default=b"", repr=False)

    @property
    def domain_name(self) -> str:
        """KubeVirt names the libvirt domain ``<namespace>_<name>``."""
        return f"{self.namespace}_{self.name}"

    @property
    def running_or_final(self) -> bool:
        return self.phase == VirtualMachineInstancePhase.RUNNING or self.phase in FINAL_VMI_PHASES


def read_vmi(raw: bytes) -> VMIFacts:
    """The facts of the VMI JSON a request carries (kept in ``raw`` for the conversion)."""
    return vmi_facts(decode_vmi(raw), raw=raw)


def decode_vmi(raw: bytes) -> dict[str, Any]:
    """The VMI JSON object a request carries; :class:`InvalidVMIError` when it is not one."""
    if not raw:
        raise InvalidVMIError("vmi: no VMI in the request")
    try:
        vmi = load_json(raw, "VMI JSON")
    except ValueError as err:  # also bad UTF-8, and input beyond kubevirt.input_limits
        raise InvalidVMIError(f"vmi: malformed VMI JSON: {err}") from None
    if not isinstance(vmi, dict):
        raise InvalidVMIError("vmi: the VMI JSON must be an object")
    return vmi


def vmi_facts(vmi: Mapping[str, Any], *, raw: bytes = b"") -> VMIFacts:
    metadata = _mapping(vmi, "metadata", "metadata")
    spec = _mapping(vmi, "spec", "spec")
    status = _mapping(vmi, "status", "status")
    name = _string(metadata, "name", "metadata.name", required=True)
    namespace = _string(metadata, "namespace", "metadata.namespace") or "default"
    grace = spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_PERIOD_SECONDS)
    if grace is None:
        grace = DEFAULT_GRACE_PERIOD_SECONDS
    if not isinstance(grace, int) or isinstance(grace, bool) or grace < 0:
        raise InvalidVMIError(
            f"spec.terminationGracePeriodSeconds: must be a non-negative integer, got {grace!r}"
        )
    migration = _mapping(status, "migrationState", "status.migrationState")
    runtime_user = status.get("runtimeUser", 0)
    if runtime_user is None:
        runtime_user = 0
    if not isinstance(runtime_user, int) or isinstance(runtime_user, bool) or runtime_user < 0:
        raise InvalidVMIError(f"status.runtimeUser: must be a non-negative integer, got {runtime_user!r}")
    annotations = _mapping(metadata, "annotations", "metadata.annotations")
    return VMIFacts(
        name=name,
        namespace=namespace,
        uid=check_uid(_string(metadata, "uid", "metadata.uid"), "metadata.uid"),
        phase=_string(status, "phase", "status.phase"),
        start_paused=_string(spec, "startStrategy", "spec.startStrategy") == "Paused",
        grace_period_seconds=grace,
        migration_uid=_string(migration, "migrationUid", "status.migrationState.migrationUid"),
        migration_target_pod=_string(migration, "targetPod", "status.migrationState.targetPod"),
        non_root=runtime_user != 0 or DEPRECATED_NON_ROOT_VMI_ANNOTATION in annotations,
        raw=raw,
    )


def check_uid(uid: str, path: str) -> str:
    """``uid`` when it is safe in a file name and a URI (or empty); else :class:`InvalidVMIError`."""
    if uid and (".." in uid or not _UID.fullmatch(uid)):
        raise InvalidVMIError(
            f"{path}: {uid[:80]!r} is not a UID (letters, digits, and '-', '_', '.' between them)"
        )
    return uid


def _mapping(parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidVMIError(f"{path}: must be an object")
    return value


def _string(parent: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> str:
    value = parent.get(key)
    if value is None or value == "":
        if required:
            raise InvalidVMIError(f"{path}: required")
        return ""
    if not isinstance(value, str):
        raise InvalidVMIError(f"{path}: must be a string")
    return value
