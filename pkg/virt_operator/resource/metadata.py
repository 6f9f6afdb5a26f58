"""The labels and annotations virt-operator stamps on every object it installs (KubeVirt's
``injectOperatorMetadata``): they say who manages the object and which install strategy made it."""

from __future__ import annotations

import re

from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt_api.core.v1.constants import (
    APP_COMPONENT,
    APP_LABEL_PREFIX,
    INSTALL_STRATEGY_IDENTIFIER_ANNOTATION,
    INSTALL_STRATEGY_REGISTRY_ANNOTATION,
    INSTALL_STRATEGY_VERSION_ANNOTATION,
    KUBE_VIRT_GENERATION_ANNOTATION,
    MANAGED_BY_LABEL_OPERATOR_VALUE,
)
from kubevirt_api.view import JSON

MANAGED_BY_LABEL = f"{APP_LABEL_PREFIX}/managed-by"
COMPONENT_LABEL = f"{APP_LABEL_PREFIX}/component"
VERSION_LABEL = f"{APP_LABEL_PREFIX}/version"
PART_OF_LABEL = f"{APP_LABEL_PREFIX}/part-of"
MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY_LABEL_OPERATOR_VALUE}"
# What Kubernetes accepts as a label value.
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def valid_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def stamp(obj: JSON, config: InstallConfig) -> JSON:
    """Adds the operator's labels and install-strategy annotations to ``obj`` (in place) and returns it."""
    metadata = obj.setdefault("metadata", {})
    labels = metadata.setdefault("labels", {})
    if config.product_version and valid_label_value(config.product_version):
        labels[VERSION_LABEL] = config.product_version
    if config.product_name and valid_label_value(config.product_name):
        labels[PART_OF_LABEL] = config.product_name
    component = config.product_component
    labels[COMPONENT_LABEL] = component if component and valid_label_value(component) else APP_COMPONENT
    labels[MANAGED_BY_LABEL] = MANAGED_BY_LABEL_OPERATOR_VALUE
    annotations = metadata.setdefault("annotations", {})
    annotations[INSTALL_STRATEGY_VERSION_ANNOTATION] = config.version
    annotations[INSTALL_STRATEGY_REGISTRY_ANNOTATION] = config.registry
    annotations[INSTALL_STRATEGY_IDENTIFIER_ANNOTATION] = config.deployment_id
    annotations[KUBE_VIRT_GENERATION_ANNOTATION] = str(config.kubevirt_generation)
    return obj


def is_managed(obj: JSON) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(MANAGED_BY_LABEL) == MANAGED_BY_LABEL_OPERATOR_VALUE)
