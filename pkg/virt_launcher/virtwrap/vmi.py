"""The launcher's reading of a request's VMI: decoded once, its identity and lifecycle facts checked.

Every command carries the VMI. It is decoded here once per request into a :class:`VMIView` (the light
view of ``kubevirt_api.view``), which the facts carry on to the pod's storage and network; the domain
manager needs only the facts. The full typed VMI is built only when a domain is built, in the conversion
worker (:mod:`kubevirt.virt_launcher.virtwrap.domain_pipeline`), from the same JSON bytes, which
:class:`VMIFacts` keeps as ``raw``: the typed API stays out of the long-lived launcher.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from kubevirt.input_limits import load_json
from kubevirt_api.core.v1 import FINAL_VMI_PHASES, VirtualMachineInstancePhase
from kubevirt_api.core.v1.constants import DEPRECATED_NON_ROOT_VMI_ANNOTATION
from kubevirt_api.view import VMIView

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
    # The decoded VMI, for the readers after the command server (storage, network).
    view: VMIView = dataclasses.field(
        default_factory=lambda: VMIView({}, error=InvalidVMIError), repr=False, compare=False
    )

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


def vmi_facts(vmi: dict[str, Any], *, raw: bytes = b"") -> VMIFacts:
    view = VMIView(vmi, error=InvalidVMIError)
    spec, status = view.spec, view.status
    migration = status.object("migrationState")
    runtime_user = status.integer("runtimeUser", minimum=0)
    return VMIFacts(
        name=view.name,
        namespace=view.namespace,
        uid=check_uid(view.uid, "metadata.uid"),
        phase=view.phase,
        start_paused=spec.string("startStrategy") == "Paused",
        grace_period_seconds=spec.integer(
            "terminationGracePeriodSeconds", default=DEFAULT_GRACE_PERIOD_SECONDS, minimum=0
        ),
        migration_uid=migration.string("migrationUid"),
        migration_target_pod=migration.string("targetPod"),
        non_root=runtime_user != 0 or DEPRECATED_NON_ROOT_VMI_ANNOTATION in view.annotations,
        raw=raw,
        view=view,
    )


def check_uid(uid: str, path: str) -> str:
    """``uid`` when it is safe in a file name and a URI (or empty); else :class:`InvalidVMIError`."""
    if uid and (".." in uid or not _UID.fullmatch(uid)):
        raise InvalidVMIError(
            f"{path}: {uid[:80]!r} is not a UID (letters, digits, and '-', '_', '.' between them)"
        )
    return uid
