"""Istio's sidecar injection as KubeVirt reads it from a VMI's annotations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

INJECT_SIDECAR_ANNOTATION: Final = "sidecar.istio.io/inject"


def proxy_injection_enabled(annotations: Mapping[str, str] | None) -> bool:
    """Whether the launcher pod gets an istio-proxy container (the annotation says true, in any case)."""
    return (annotations or {}).get(INJECT_SIDECAR_ANNOTATION, "").lower() == "true"
