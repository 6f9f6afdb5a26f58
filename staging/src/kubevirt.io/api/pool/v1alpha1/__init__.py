"""``pool.kubevirt.io/v1alpha1``: VirtualMachinePool."""

from kubevirt_api.pool.v1alpha1.types import *  # noqa: F403
