"""A VMI CREATE through virt-api's VMI mutating webhook in-process, as the API server would send it."""

from __future__ import annotations

from typing import Any

from kubevirt.admission.review import CREATE, AdmissionRequest, GroupVersionResource
from kubevirt.admission.state import ClusterState
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.routes import VMI_MUTATE, webhook_handlers
from kubevirt.virt_config import ClusterConfig

JSON = dict[str, Any]


def mutate_vmi_create(state: ClusterState, vmi: JSON, *, namespace: str = "ns", name: str = "v") -> JSON:
    """The webhook's AdmissionResponse (as its JSON) for creating ``vmi`` with ``state`` as the cluster."""
    handler = webhook_handlers(build_context(ClusterConfig(), state))[VMI_MUTATE]
    request = AdmissionRequest(
        uid="u",
        operation=CREATE,
        resource=GroupVersionResource("kubevirt.io", "v1", "virtualmachineinstances"),
        sub_resource="",
        name=name,
        namespace=namespace,
        object=vmi,
        old_object=None,
    )
    return handler(request).to_dict("u")
