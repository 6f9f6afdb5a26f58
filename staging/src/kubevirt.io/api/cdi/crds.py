"""The ``cdi.kubevirt.io`` CustomResourceDefinitions the project serves in place of CDI's.

They are apart from :data:`kubevirt_api.crd.CRDS` on purpose: virt-operator installs them only when the
KubeVirt CR enables the ``DataImporter`` feature gate, and never over CDI's own. Each carries the label
virt-operator stamps on what it installs (``app.kubernetes.io/managed-by: virt-operator``), which tells
them from CDI's.

Names, scope, versions, subresources and printer columns are CDI v1.63's; the schemas come from the
models in :mod:`kubevirt_api.cdi.v1beta1`.
"""

from __future__ import annotations

from functools import cache
from typing import Final

from kubevirt_api.base import TypeMeta
from kubevirt_api.cdi.constants import GROUP
from kubevirt_api.cdi.v1beta1 import CDI, CDIConfig, DataSource, DataVolume, StorageProfile
from kubevirt_api.core.v1.constants import APP_LABEL_PREFIX, MANAGED_BY_LABEL_OPERATOR_VALUE
from kubevirt_api.crd import CrdFacts, build_custom_resource_definition
from kubevirt_api.openapi import UnknownKindError, structural_schema
from kubevirt_api.view import JSON

__all__ = [
    "CDI_CRDS",
    "CDI_KIND_MODELS",
    "PROJECT_CRD_LABELS",
    "cdi_crd_schema",
    "cdi_custom_resource_definition",
]

# What marks a cdi.kubevirt.io CRD as the project's rather than CDI's.
PROJECT_CRD_LABELS: Final = {f"{APP_LABEL_PREFIX}/managed-by": MANAGED_BY_LABEL_OPERATOR_VALUE}

_V1BETA1: Final = ({"name": "v1beta1", "served": True, "storage": True},)
# CDI still serves its installation object as v1alpha1, with the same schema.
_CDI_VERSIONS: Final = ({"name": "v1alpha1", "served": True, "storage": False}, *_V1BETA1)
_AGE: Final = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_PHASE: Final = {"name": "Phase", "type": "string", "jsonPath": ".status.phase"}


def _facts(
    kind: str,
    *,
    short_names: tuple[str, ...] = (),
    columns: tuple[JSON, ...] = (),
    versions: tuple[JSON, ...] = _V1BETA1,
    status_subresource: bool = False,
    namespaced: bool = False,
) -> CrdFacts:
    """CDI's namespaced kinds are in the ``all`` category, its cluster-wide ones in none."""
    return CrdFacts(
        kind=kind,
        group=GROUP,
        plural=kind.lower() + "s",
        singular=kind.lower(),
        short_names=short_names,
        columns=list(columns),
        versions=versions,
        status_subresource=status_subresource,
        labels=dict(PROJECT_CRD_LABELS),
        categories=("all",) if namespaced else (),
        namespaced=namespaced,
    )


CDI_KIND_MODELS: Final[dict[str, type[TypeMeta]]] = {
    model.__name__: model for model in (DataVolume, CDI, CDIConfig, StorageProfile, DataSource)
}

CDI_CRDS: Final[dict[str, CrdFacts]] = {
    facts.kind: facts
    for facts in (
        _facts(
            "DataVolume",
            short_names=("dv", "dvs"),
            columns=(
                _PHASE,
                {"name": "Progress", "type": "string", "jsonPath": ".status.progress"},
                {"name": "Restarts", "type": "integer", "jsonPath": ".status.restartCount"},
                _AGE,
            ),
            status_subresource=True,
            namespaced=True,
        ),
        # No status subresource: CDI writes the status of the other kinds with the object.
        _facts("CDI", short_names=("cdi", "cdis"), columns=(_AGE, _PHASE), versions=_CDI_VERSIONS),
        _facts("CDIConfig"),
        _facts("StorageProfile"),
        _facts("DataSource", short_names=("das",), namespaced=True),
    )
}


@cache
def cdi_crd_schema(kind: str) -> JSON:
    """The ``openAPIV3Schema`` of the CRD for a ``cdi.kubevirt.io`` kind; shared, so read-only."""
    try:
        model = CDI_KIND_MODELS[kind]
    except KeyError:
        raise UnknownKindError(kind) from None
    return structural_schema(model, top_level=True)


def cdi_custom_resource_definition(kind: str) -> JSON:
    """The CRD object for a ``cdi.kubevirt.io`` kind, as virt-operator installs it."""
    return build_custom_resource_definition(CDI_CRDS[kind], cdi_crd_schema(kind))
