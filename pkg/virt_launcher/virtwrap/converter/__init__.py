"""VMI → libvirt domain (``virtwrap/converter`` in KubeVirt). Pure: no I/O, no libvirt, no clock.

This package is the converter's one public entry point: code outside virt-launcher (``virtctl render``)
imports from here and nothing else under ``virtwrap`` (an import-linter contract checks it).
"""

from ..api import Domain
from .builder import CONFIGURATORS, convert_vmi_to_domain
from .context import SMBIOS, ConverterContext, EFIConfiguration
from .errors import ConversionError

__all__ = [
    "CONFIGURATORS",
    "SMBIOS",
    "ConversionError",
    "ConverterContext",
    "Domain",
    "EFIConfiguration",
    "convert_vmi_to_domain",
]
