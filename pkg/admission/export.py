"""VirtualMachineExport admission (KubeVirt v1.6's ``pkg/storage/admitters/vmexport.go``).

Creating an export needs the ``VMExport`` feature gate and a source KubeVirt can export: a PVC (no API
group), a VirtualMachineSnapshot of ``snapshot.kubevirt.io`` or a VirtualMachine of ``kubevirt.io``, each
named. Once created, the spec cannot change. The spec is compared as Go decodes it (unknown fields
dropped, ``ttlDuration`` as a duration: ``1h`` equals ``60m``), and a ``ttlDuration`` Go cannot parse is
refused with Go's message, as KubeVirt's decoding of the request refuses it.
"""

from __future__ import annotations

from typing import Final

from kubevirt.admission import causes as c
from kubevirt.admission import response
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import obj, opt_text, text
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import CREATE, UPDATE
from kubevirt.service.durations import parse_go_duration
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.snapshot.v1beta1.types import SNAPSHOT_GROUP_NAME
from kubevirt_api.view import JSON

EXPORTS: Final = "virtualmachineexports"
VMEXPORT_FEATURE_GATE: Final = "VMExport"
EXPORT_GATE_DISABLED: Final = "vm export feature gate not enabled"
IMMUTABLE_SPEC: Final = "spec in immutable after creation"  # sic, KubeVirt's wording

PVC_KIND: Final = "PersistentVolumeClaim"
VM_SNAPSHOT_KIND: Final = "VirtualMachineSnapshot"
VM_KIND: Final = "VirtualMachine"

SPEC: Final = Path("spec")
_SOURCE: Final = SPEC.child("source")
# KubeVirt names the group after the Go field ("spec.source.APIGroup").
_SOURCE_NAME: Final = _SOURCE.child("name")
_SOURCE_GROUP: Final = _SOURCE.child("APIGroup")

# A decoded spec: (source apiGroup, kind, name), tokenSecretRef, ttlDuration in nanoseconds.
GoSpec = tuple[tuple[str | None, str, str], str | None, int | None]


class ExportDecodeError(ValueError):
    """The export does not decode as Go decodes it (a ``ttlDuration`` that is not a duration)."""


def decode_spec(export: JSON) -> GoSpec:
    """``spec`` as Go's ``VirtualMachineExportSpec`` holds it; raises :class:`ExportDecodeError`."""
    spec = obj(export, "spec")
    source = obj(spec, "source")
    ttl_text = opt_text(spec, "ttlDuration")
    try:
        ttl = None if ttl_text is None else parse_go_duration(ttl_text)
    except ValueError as err:
        raise ExportDecodeError(str(err)) from None
    reference = (opt_text(source, "apiGroup"), text(source, "kind"), text(source, "name"))
    return reference, opt_text(spec, "tokenSecretRef"), ttl


def _named(name: str, message: str) -> list[StatusCause]:
    return [] if name else [c.invalid(_SOURCE_NAME, message)]


def _in_group(group: str | None, expected: str, what: str) -> list[StatusCause]:
    return [] if group == expected else [c.invalid(_SOURCE_GROUP, f"{what} API group must be {expected}")]


def source_causes(spec: GoSpec) -> list[StatusCause]:
    """The source's name, then its API group, checked by kind; any other kind is one cause."""
    group, kind, name = spec[0]
    if kind == PVC_KIND:
        causes = _named(name, "PVC name must not be empty")
        if group:
            causes.append(c.invalid(_SOURCE_GROUP, "PVC API group must be missing or blank"))
        return causes
    if kind == VM_SNAPSHOT_KIND:
        return [
            *_named(name, "VMSnapshot name must not be empty"),
            *_in_group(group, SNAPSHOT_GROUP_NAME, "VMSnapshot"),
        ]
    if kind == VM_KIND:
        return [
            *_named(name, "Virtual Machine name must not be empty"),
            *_in_group(group, GROUP_NAME, "VM"),
        ]
    return [c.invalid(_SOURCE.child("kind"), "invalid kind")]


def admit_vm_export(
    operation: str, export: JSON, old: JSON | None, config: ClusterConfig
) -> AdmissionResponse:
    """The answer for a VirtualMachineExport created or updated; ``old`` is needed on updates."""
    if operation == CREATE and not config.enabled(VMEXPORT_FEATURE_GATE):
        return response.error(EXPORT_GATE_DISABLED)
    try:
        spec = decode_spec(export)
        if operation == CREATE:
            return response.from_causes(source_causes(spec))
        if operation == UPDATE:
            unchanged = decode_spec(old or {}) == spec
            return response.from_causes([] if unchanged else [c.invalid(SPEC, IMMUTABLE_SPEC)])
    except ExportDecodeError as err:
        return response.error(str(err))
    return response.error(f"unexpected operation {operation}")
