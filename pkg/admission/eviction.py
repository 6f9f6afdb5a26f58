"""The virt-launcher pod eviction admitter (``pod-eviction-admitter.go``).

Evicting the pod of a VMI that should live-migrate instead marks the VMI for evacuation (a JSON patch
the caller applies unless the request is a dry run) and is denied with 429, so the eviction API retries
later; everything else is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubevirt.admission import response
from kubevirt.admission.json_fields import items, obj, string_map, text
from kubevirt.admission.response import AdmissionResponse
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1.constants import APP_LABEL, DOMAIN_ANNOTATION
from kubevirt_api.view import JSON

NO_NAME = "resource name may not be empty"


@dataclass(frozen=True)
class EvictionDecision:
    response: AdmissionResponse
    # JSON patch for the VMI named ``vmi_name`` (``add /status/evacuationNodeName``), if it must be marked.
    vmi_patch: list[JSON] | None = None
    vmi_name: str = ""


def effective_strategy(vmi: JSON, config: ClusterConfig) -> str | None:
    strategy = obj(vmi, "spec").get("evictionStrategy")
    if isinstance(strategy, str):
        return strategy
    return config.eviction_strategy


def is_migratable(vmi: JSON) -> bool:
    return any(
        text(cond, "type") == "LiveMigratable" and text(cond, "status") == "True"
        for cond in items(obj(vmi, "status"), "conditions")
    )


def is_completed(pod: JSON) -> bool:
    """A pod whose containers have all ended: nothing of a guest is left in it to protect."""
    return text(obj(pod, "status"), "phase") in ("Succeeded", "Failed")


def decide_eviction(pod: JSON, vmi: JSON | None, config: ClusterConfig) -> EvictionDecision:
    """What to answer for evicting ``pod`` whose VMI (looked up by the caller) is ``vmi``."""
    metadata = obj(pod, "metadata")
    if string_map(metadata, "labels").get(APP_LABEL) != "virt-launcher" or is_completed(pod):
        # A finished launcher pod (the source of a completed migration, say) goes: kubectl drain
        # would otherwise wait for it forever.
        return EvictionDecision(response.allowed())
    if DOMAIN_ANNOTATION not in string_map(metadata, "annotations"):
        return EvictionDecision(response.allowed())
    if vmi is None:
        # What the Kubernetes client's NotFound error reads like.
        name = string_map(metadata, "annotations")[DOMAIN_ANNOTATION]
        # client-go refuses a GET without a name before asking the API server.
        missing = f'virtualmachineinstance.kubevirt.io "{name}" not found' if name else NO_NAME
        return EvictionDecision(response.too_many_requests(f"kubevirt failed getting the vmi: {missing}"))
    strategy = effective_strategy(vmi, config)
    name = text(obj(vmi, "metadata"), "name")
    namespace = text(obj(vmi, "metadata"), "namespace")
    mark = False
    if strategy == "LiveMigrate":
        if not is_migratable(vmi):
            return EvictionDecision(
                response.too_many_requests(
                    f"VMI {name} is configured with an eviction strategy but is not live-migratable"
                )
            )
        mark = True
    elif strategy == "LiveMigrateIfPossible":
        mark = is_migratable(vmi)
    elif strategy == "External":
        mark = True
    if not mark:
        return EvictionDecision(response.allowed())
    status = obj(vmi, "status")
    if text(status, "evacuationNodeName"):
        return EvictionDecision(
            response.too_many_requests(
                f'Evacuation in progress: Eviction triggered evacuation of VMI "{namespace}/{name}"'
            )
        )
    node = text(status, "nodeName")
    if node != text(obj(pod, "spec"), "nodeName"):
        return EvictionDecision(response.too_many_requests("Eviction request for target Pod"))
    patch = [{"op": "add", "path": "/status/evacuationNodeName", "value": node}]
    denial = response.too_many_requests(f'Eviction triggered evacuation of VMI "{namespace}/{name}"')
    return EvictionDecision(denial, vmi_patch=patch, vmi_name=name)
