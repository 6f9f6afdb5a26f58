"""``instancetype.kubevirt.io``: instance types and preferences that size and shape VirtualMachines."""

from kubevirt_api.instancetype.constants import *  # noqa: F403
