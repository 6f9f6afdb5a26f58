"""``clone.kubevirt.io/v1beta1``: VirtualMachineClone."""

from kubevirt_api.clone.v1beta1.types import *  # noqa: F403
