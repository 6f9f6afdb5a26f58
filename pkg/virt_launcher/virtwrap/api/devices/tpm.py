"""``<tpm>``: the emulated TPM."""

from __future__ import annotations

from ..xmlmodel import XMLElement, attr, child, element


@element("backend")
class TPMBackend(XMLElement):
    type: str | None = attr()
    version: str | None = attr()
    persistent_state: str | None = attr()


@element("tpm")
class TPM(XMLElement):
    model: str | None = attr()
    backend: TPMBackend = child(TPMBackend, required=True)
