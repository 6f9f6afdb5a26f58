"""``export.kubevirt.io/v1beta1``: VirtualMachineExport."""

from kubevirt_api.export.v1beta1.types import *  # noqa: F403
