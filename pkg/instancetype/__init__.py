"""Instance types and preferences applied to a VirtualMachineInstance spec, as KubeVirt applies them.

A pure library (no API access): callers look the objects up and hand their specs in.

* :func:`apply_to_vmi` — the instance type's sizing and placement, then the preference's defaults;
  returns the conflicts when the spec already sets what the instance type owns.
* :func:`expand_vmi` — the same for a VMI built from a VM, with the name annotations.
* :func:`check_requirements` — a preference's minimum CPU and memory against what the VM gets.
* :func:`check_spread_topology` — a ``spread`` preference must divide the instance type's vCPUs.
* :func:`set_name_annotations` — the ``kubevirt.io/*instancetype-name`` / ``*preference-name``
  annotations on the VMI.
* :mod:`kubevirt.instancetype.matcher` — which kind a VM's matcher names, and the lookup protocol.
"""

from kubevirt.instancetype.annotations import set_name_annotations
from kubevirt.instancetype.apply import apply_to_vmi, expand_vmi
from kubevirt.instancetype.conflict import Conflict, conflicts_message
from kubevirt.instancetype.requirements import RequirementError, check_requirements
from kubevirt.instancetype.topology import check_spread_topology

__all__ = [
    "Conflict",
    "RequirementError",
    "apply_to_vmi",
    "check_requirements",
    "check_spread_topology",
    "conflicts_message",
    "expand_vmi",
    "set_name_annotations",
]
