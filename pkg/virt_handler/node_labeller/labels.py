"""The labels a node's capabilities give (KubeVirt's ``prepareLabels``), and which labels the labeller owns.

Pure: the capabilities, the cluster's obsolete CPU models and the few host facts (realtime, Hyper-V
capabilities of /dev/kvm) in, a label map out. The cluster's ``minCPUModel`` plays no part: KubeVirt
v1.6 reads it nowhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from kubevirt_api.core.v1 import constants as c

from .capabilities import HostCapabilities

# KubeVirt's list: used to filter named models when the cluster configures none.
DEFAULT_OBSOLETE_CPU_MODELS = frozenset(
    f"{model}{suffix}"
    for model in (
        "486",
        "pentium",
        "pentium2",
        "pentium3",
        "pentiumpro",
        "coreduo",
        "n270",
        "core2duo",
        "Conroe",
        "athlon",
        "phenom",
        "qemu64",
        "qemu32",
        "kvm64",
        "kvm32",
        "Opteron_G1",
        "Opteron_G2",
    )
    for suffix in ("", "-v1")
)

# Every label starting with one of these is the labeller's: removed when its answer no longer has it.
# As in KubeVirt, the vendor label is not among them (it is added but never taken away).
OWNED_PREFIXES = (
    c.CPU_FEATURE_LABEL,
    c.CPU_MODEL_LABEL,
    c.SUPPORTED_HOST_MODEL_MIGRATION_CPU,
    c.CPU_TIMER_LABEL,
    c.HYPERV_LABEL,
    c.REALTIME_LABEL,
    c.SEV_LABEL,
    c.SEVES_LABEL,
    c.HOST_MODEL_CPU_LABEL,
    c.HOST_MODEL_REQUIRED_FEATURES_LABEL,
    c.NODE_HOST_MODEL_IS_OBSOLETE_LABEL,
    c.SUPPORTED_MACHINE_TYPE_LABEL,
)

# A label's name part: what the API server accepts after the prefix.
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def is_owned(label: str) -> bool:
    return label.startswith(OWNED_PREFIXES)


def valid_name(name: str) -> bool:
    return bool(_NAME.match(name))


def _without_obsolete(models: Iterable[str], obsolete: frozenset[str] | None) -> list[str]:
    excluded = DEFAULT_OBSOLETE_CPU_MODELS if obsolete is None else obsolete
    return [m for m in models if m not in excluded]


def host_model_is_obsolete(caps: HostCapabilities, obsolete: frozenset[str] | None) -> bool:
    # Only a configured list counts here: KubeVirt's default list is not consulted for the host model.
    return caps.host_model is not None and obsolete is not None and caps.host_model.name in obsolete


def node_labels(
    caps: HostCapabilities,
    *,
    obsolete: frozenset[str] | None,
    realtime: bool = False,
    hyperv: Iterable[str] = (),
) -> dict[str, str]:
    """The labeller's labels for this node. Names the API server would refuse are left out."""
    labels: dict[str, str] = {}

    def put(prefix: str, name: str, value: str = "true") -> None:
        if valid_name(name):
            labels[prefix + name] = value

    for feature in sorted(caps.supported_features):
        put(c.CPU_FEATURE_LABEL, feature)
    for model in _without_obsolete(caps.usable_models, obsolete):
        put(c.CPU_MODEL_LABEL, model)
    for model in _without_obsolete(caps.known_models, obsolete):
        put(c.SUPPORTED_HOST_MODEL_MIGRATION_CPU, model)
    for machine in caps.machines:
        put(c.SUPPORTED_MACHINE_TYPE_LABEL, machine)
    for capability in hyperv:
        put(c.HYPERV_LABEL, capability)
    if caps.tsc is not None:
        labels[c.CPU_TIMER_LABEL + "tsc-frequency"] = str(caps.tsc.frequency)
        labels[c.CPU_TIMER_LABEL + "tsc-scalable"] = str(caps.tsc.scalable).lower()
    if caps.host_model is not None:
        if host_model_is_obsolete(caps, obsolete):
            labels[c.NODE_HOST_MODEL_IS_OBSOLETE_LABEL] = "true"
        for feature in sorted(caps.host_model.required_features):
            put(c.HOST_MODEL_REQUIRED_FEATURES_LABEL, feature)
        put(c.CPU_MODEL_VENDOR_LABEL, caps.host_model.vendor)
        put(c.HOST_MODEL_CPU_LABEL, caps.host_model.name)
    if realtime:
        labels[c.REALTIME_LABEL] = "true"
    if caps.sev:
        labels[c.SEV_LABEL] = "true"
    if caps.sev_es:
        labels[c.SEVES_LABEL] = "true"
    if caps.secure_execution:
        labels[c.SECURE_EXECUTION_LABEL] = "true"
    return labels


def relabelled(current: Mapping[str, str], wanted: Mapping[str, str]) -> dict[str, str]:
    """``current`` with every owned label replaced by ``wanted``; other labels untouched."""
    kept = {key: value for key, value in current.items() if not is_owned(key)}
    kept.update(wanted)
    return kept
