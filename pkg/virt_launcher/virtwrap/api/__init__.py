"""The libvirt domain model (``virtwrap/api`` in KubeVirt): declared once, written and read with lxml."""

from .schema import Domain
from .xmlmodel import XMLElement, XMLModelError

__all__ = ["Domain", "XMLElement", "XMLModelError"]
