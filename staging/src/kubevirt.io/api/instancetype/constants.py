"""Names of the ``instancetype.kubevirt.io`` group: resources, kinds and the labels KubeVirt reads."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CLUSTER_INSTANCETYPE_KIND",
    "CLUSTER_INSTANCETYPE_PLURAL",
    "CLUSTER_PREFERENCE_KIND",
    "CLUSTER_PREFERENCE_PLURAL",
    "CONTROLLER_REVISION_OBJECT_GENERATION_LABEL",
    "CONTROLLER_REVISION_OBJECT_KIND_LABEL",
    "CONTROLLER_REVISION_OBJECT_NAME_LABEL",
    "CONTROLLER_REVISION_OBJECT_UID_LABEL",
    "CONTROLLER_REVISION_OBJECT_VERSION_LABEL",
    "DEFAULT_INSTANCETYPE_KIND_LABEL",
    "DEFAULT_INSTANCETYPE_LABEL",
    "DEFAULT_PREFERENCE_KIND_LABEL",
    "DEFAULT_PREFERENCE_LABEL",
    "INSTANCETYPE_GROUP_NAME",
    "INSTANCETYPE_KIND",
    "INSTANCETYPE_LATEST_VERSION",
    "INSTANCETYPE_PLURAL",
    "PREFERENCE_KIND",
    "PREFERENCE_PLURAL",
]

INSTANCETYPE_GROUP_NAME: Final = "instancetype.kubevirt.io"
INSTANCETYPE_LATEST_VERSION: Final = "v1beta1"

INSTANCETYPE_KIND: Final = "VirtualMachineInstancetype"
CLUSTER_INSTANCETYPE_KIND: Final = "VirtualMachineClusterInstancetype"
PREFERENCE_KIND: Final = "VirtualMachinePreference"
CLUSTER_PREFERENCE_KIND: Final = "VirtualMachineClusterPreference"

INSTANCETYPE_PLURAL: Final = "virtualmachineinstancetypes"
CLUSTER_INSTANCETYPE_PLURAL: Final = "virtualmachineclusterinstancetypes"
PREFERENCE_PLURAL: Final = "virtualmachinepreferences"
CLUSTER_PREFERENCE_PLURAL: Final = "virtualmachineclusterpreferences"

# Labels on a PVC or DataSource naming the instance type and preference a VM inferring from it gets.
DEFAULT_INSTANCETYPE_LABEL: Final = "instancetype.kubevirt.io/default-instancetype"
DEFAULT_INSTANCETYPE_KIND_LABEL: Final = "instancetype.kubevirt.io/default-instancetype-kind"
DEFAULT_PREFERENCE_LABEL: Final = "instancetype.kubevirt.io/default-preference"
DEFAULT_PREFERENCE_KIND_LABEL: Final = "instancetype.kubevirt.io/default-preference-kind"

# Labels on the ControllerRevision holding a VM's copy of an instance type or preference: which object,
# at which generation and API version, it copies.
CONTROLLER_REVISION_OBJECT_GENERATION_LABEL: Final = "instancetype.kubevirt.io/object-generation"
CONTROLLER_REVISION_OBJECT_KIND_LABEL: Final = "instancetype.kubevirt.io/object-kind"
CONTROLLER_REVISION_OBJECT_NAME_LABEL: Final = "instancetype.kubevirt.io/object-name"
CONTROLLER_REVISION_OBJECT_UID_LABEL: Final = "instancetype.kubevirt.io/object-uid"
CONTROLLER_REVISION_OBJECT_VERSION_LABEL: Final = "instancetype.kubevirt.io/object-version"
