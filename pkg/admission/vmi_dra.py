"""GPUs allocated through Dynamic Resource Allocation (part of ``ValidateVirtualMachineInstanceSpec``).

A GPU is a DRA GPU when it names no ``deviceName`` but carries a claim request (``claimName`` and/or
``requestName``); every other GPU must name a ``deviceName`` (a device plugin's resource) and no claim.
DRA GPUs need the ``GPUsWithDRA`` feature gate (``HostDevicesWithDRA`` does not admit them), and each
one's ``claimName`` must be the name of an entry of ``spec.resourceClaims``.

KubeVirt v1.6 checks nothing DRA-specific for ``hostDevices``: they only need the ``HostDevices`` gate,
like any host device (:func:`kubevirt.admission.vmi_devices.host_devices`).

Like KubeVirt, the GPU causes carry the path ``<root>.spec.domain.devices.gpus`` (so ``spec.spec...``
for a VMI) while the claim cause carries ``<root>.resourceClaims``.
"""

from __future__ import annotations

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import has, items, obj, opt_text, text
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

GPUS_WITH_DRA_GATE = "GPUsWithDRA"
WITHOUT_DEVICE_NAME = "vmi.spec.domain.devices.gpus contains GPUs without deviceName"
DEVICE_NAME_AND_CLAIM = "vmi.spec.domain.devices.gpus contains GPUs with both deviceName and claimRequest"
GATE_DISABLED = "vmi.spec.domain.devices.gpus contains DRA enabled GPUs but feature gate is not enabled"
CLAIMS_MISSING = "vmi.spec.resourceClaims must specify all claims used in vmi.spec.domain.devices.gpus"


def has_claim_request(device: JSON) -> bool:
    """Whether a GPU or host device carries a claim request (Go's non-nil inline ``ClaimRequest``)."""
    return has(device, "claimName") or has(device, "requestName")


def is_dra_gpu(gpu: JSON) -> bool:
    return not text(gpu, "deviceName") and has_claim_request(gpu)


def gpus(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    """The DRA rules for ``spec.domain.devices.gpus``; each failing group ends the checks."""
    where = field.child("spec", "domain", "devices", "gpus")
    all_gpus = items(obj(obj(spec, "domain"), "devices"), "gpus")
    dra = [gpu for gpu in all_gpus if is_dra_gpu(gpu)]
    out: list[StatusCause] = []
    for gpu in all_gpus:
        if is_dra_gpu(gpu):
            continue
        if not text(gpu, "deviceName"):
            return [*out, c.invalid(where, WITHOUT_DEVICE_NAME)]
        if has_claim_request(gpu):
            out.append(c.invalid(where, DEVICE_NAME_AND_CLAIM))
    if dra and not config.enabled(GPUS_WITH_DRA_GATE):
        return [*out, c.invalid(where, GATE_DISABLED)]
    declared = {text(claim, "name") for claim in items(spec, "resourceClaims")}
    # A DRA GPU with a requestName but no claimName names no claim. KubeVirt dereferences the missing
    # name there and its webhook fails the request without an answer; here it counts as a claim
    # missing from spec.resourceClaims, so the request is refused with a cause instead.
    claimed = [opt_text(gpu, "claimName") for gpu in dra]
    if any(name is None or name not in declared for name in claimed):
        out.append(c.invalid(field.child("resourceClaims"), CLAIMS_MISSING))
    return out
