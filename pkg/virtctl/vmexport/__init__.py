"""``virtctl vmexport``: create, delete and download from VirtualMachineExports, as KubeVirt's virtctl."""

from kubevirt.virtctl.vmexport.command import vmexport

__all__ = ["vmexport"]
