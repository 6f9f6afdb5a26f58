"""VMI defaulting (KubeVirt's ``pkg/defaults`` and the VMI mutating webhook's CREATE changes)."""

from .vmi import DefaultingError, set_vmi_defaults

__all__ = ["DefaultingError", "set_vmi_defaults"]
