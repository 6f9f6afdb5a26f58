"""The VMI create admitter's cause list (``VMICreateAdmitter.Admit``), on an already defaulted VMI."""

from __future__ import annotations

from kubevirt.admission import vmi_compute as compute
from kubevirt.admission import vmi_network as network
from kubevirt.admission import vmi_spec
from kubevirt.admission import vmi_volumes as volumes_rules
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.featuregates import validate_feature_gates
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import obj
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON


def admit_vmi_create(
    vmi: JSON, config: ClusterConfig, *, kubevirt_account: bool = False
) -> list[StatusCause]:
    """Every cause KubeVirt gives for creating this (mutated) VMI, untruncated and in order."""
    spec = obj(vmi, "spec")
    root = Path("spec")
    out = validate_feature_gates(config, spec)
    out.extend(network.validate_for_create(root, spec, config))
    out.extend(vmi_spec.validate_spec(root, spec, config))
    out.extend(volumes_rules.volume_disks(root, spec))
    out.extend(compute.mandatory_memory(root, obj(spec, "domain"), compute.Resources(obj(spec, "domain"))))
    out.extend(
        vmi_spec.validate_metadata(
            Path("metadata"), obj(vmi, "metadata"), config, kubevirt_account=kubevirt_account
        )
    )
    out.extend(vmi_spec.validate_hyperv(root.child("domain", "features", "hyperv"), spec))
    out.extend(vmi_spec.validate_per_arch(root, spec))
    return out
