"""``snapshot.kubevirt.io/v1beta1``: VirtualMachineSnapshot, VirtualMachineSnapshotContent, VirtualMachineRestore."""

from kubevirt_api.snapshot.v1beta1.types import *  # noqa: F403
