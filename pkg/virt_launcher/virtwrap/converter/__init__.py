"""VMI → libvirt domain (``virtwrap/converter`` in KubeVirt). Pure: no I/O, no libvirt, no clock."""

from .builder import CONFIGURATORS, convert_vmi_to_domain
from .context import SMBIOS, ConverterContext, EFIConfiguration
from .errors import ConversionError

__all__ = [
    "CONFIGURATORS",
    "SMBIOS",
    "ConversionError",
    "ConverterContext",
    "EFIConfiguration",
    "convert_vmi_to_domain",
]
