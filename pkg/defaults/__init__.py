"""VMI defaulting (KubeVirt's ``pkg/defaults`` and the VMI mutating webhook's CREATE changes)."""

from .settings import ClusterSettings
from .vmi import DefaultingError, set_vmi_defaults

__all__ = ["ClusterSettings", "DefaultingError", "set_vmi_defaults"]
