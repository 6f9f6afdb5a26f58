"""``featuregate.ValidateFeatureGates``: a discontinued gate left enabled while the spec uses its API."""

from __future__ import annotations

from collections.abc import Callable

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.json_fields import has, items, obj
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

_ALTERNATIVES = "Please refer to Kubevirt user guide for alternatives."
MACVTAP_DISCONTINUED = f"Macvtap network binding is discontinued since v1.3. {_ALTERNATIVES}"
PASST_DISCONTINUED = f"Passt network binding is discontinued since v1.3. {_ALTERNATIVES}"


def _uses_binding(name: str) -> Callable[[JSON], bool]:
    def used(spec: JSON) -> bool:
        return any(has(iface, name) for iface in items(obj(obj(spec, "domain"), "devices"), "interfaces"))

    return used


# gate -> (message, does the spec use the discontinued API)
DISCONTINUED: dict[str, tuple[str, Callable[[JSON], bool]]] = {
    "Passt": (PASST_DISCONTINUED, _uses_binding("passt")),
    "Macvtap": (MACVTAP_DISCONTINUED, _uses_binding("macvtap")),
}


def validate_feature_gates(config: ClusterConfig, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    for gate in sorted(config.feature_gates):
        entry = DISCONTINUED.get(gate)
        if entry is not None and entry[1](spec):
            out.append(c.not_supported("", entry[0]))
    return out
