"""virt-controller's template service: the virt-launcher pod a VMI runs in (KubeVirt's
``pkg/virt-controller/services``)."""

from kubevirt.virt_controller.services.errors import TemplateError
from kubevirt.virt_controller.services.parameters import PvcLookup, TemplateParameters
from kubevirt.virt_controller.services.pod import render_launcher_pod
from kubevirt.virt_controller.services.resources import memory_overhead

__all__ = [
    "PvcLookup",
    "TemplateError",
    "TemplateParameters",
    "memory_overhead",
    "render_launcher_pod",
]
