"""Checks every webhook makes before its rules: the resource, the object, the schema."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubevirt.admission import response
from kubevirt.admission.json_fields import obj, text
from kubevirt.admission.pipeline import (
    SchemaCheck,
    VMDefaulter,
    VMIDefaulter,
    decode_causes,
    defaulting_causes,
    no_schema_check,
)
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.admission.state import ClusterState, ClusterStateError, NoClusterState
from kubevirt.defaults import DefaultingError
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.view import JSON

Admit = Callable[[AdmissionRequest], AdmissionResponse]
# Applies a JSON patch to a VMI: (namespace, name, patch).
VMIPatcher = Callable[[str, str, list[JSON]], None]

KUBEVIRT_GROUP = GROUP_NAME
POOL_GROUP = "pool.kubevirt.io"


class RequestRefusedError(Exception):
    """The request cannot be admitted as asked; carries the answer."""

    def __init__(self, answer: AdmissionResponse) -> None:
        super().__init__(answer.status.get("message") if answer.status else "refused")
        self.answer = answer


def require_resource(request: AdmissionRequest, group: str, resource: str) -> None:
    if request.resource.group != group or request.resource.resource != resource:
        raise RequestRefusedError(response.error(f"expect resource to be '{resource}'"))


def require_group_resource(request: AdmissionRequest, group: str, resource: str) -> None:
    """The storage admitters' resource check: KubeVirt prints the request's resource as Go's ``%+v``."""
    gvr = request.resource
    if gvr.group != group or gvr.resource != resource:
        shown = f"{{Group:{gvr.group} Version:{gvr.version} Resource:{gvr.resource}}}"
        raise RequestRefusedError(response.error(f"unexpected resource {shown}"))


def new_object(request: AdmissionRequest) -> JSON:
    if request.object is None:
        raise RequestRefusedError(response.error("the admission request carries no object"))
    return request.object


def old_object(request: AdmissionRequest) -> JSON:
    if request.old_object is None:
        raise RequestRefusedError(response.error("the admission request carries no old object"))
    return request.old_object


@dataclass
class WebhookContext:
    """Everything the webhooks share: cluster settings, cluster state, defaulting and schema check.

    ``config`` is replaced whole when the KubeVirt CR changes; admitters read it once per request.
    """

    config: ClusterConfig
    vmi_defaulter: VMIDefaulter
    vm_defaulter: VMDefaulter
    schema: SchemaCheck = no_schema_check
    state: ClusterState = field(default_factory=NoClusterState)

    def is_kubevirt_account(self, request: AdmissionRequest) -> bool:
        return request.username in self.config.kubevirt_service_accounts


def running_vmi(ctx: WebhookContext, request: AdmissionRequest, vm: JSON) -> JSON | None:
    """The VMI a VM's volume requests must also fit: read only when the VM is ready and has requests.

    A VMI being deleted does not count; a failed read refuses the request with the reason.
    """
    status = obj(vm, "status")
    if status.get("ready") is not True or not status.get("volumeRequests"):
        return None
    metadata = obj(vm, "metadata")
    try:
        vmi = ctx.state.get_vmi(text(metadata, "namespace") or request.namespace, text(metadata, "name"))
    except ClusterStateError as err:
        raise RequestRefusedError(response.error(str(err))) from None
    if vmi is None or obj(vmi, "metadata").get("deletionTimestamp") is not None:
        return None
    return vmi


def check_schema(ctx: WebhookContext, kind: str, document: JSON) -> None:
    causes = ctx.schema(kind, document)
    if causes:
        raise RequestRefusedError(response.invalid(causes))


def checked_object(
    ctx: WebhookContext, request: AdmissionRequest, group: str, resource: str, kind: str
) -> JSON:
    """The request's new object, once its resource is the expected one and it fits ``kind``'s schema."""
    require_resource(request, group, resource)
    document = new_object(request)
    check_schema(ctx, kind, document)
    return document


def guarded(admit: Admit) -> Admit:
    """Turns refusals and decode failures raised inside ``admit`` into answers."""

    def run(request: AdmissionRequest) -> AdmissionResponse:
        try:
            return admit(request)
        except RequestRefusedError as refused:
            return refused.answer
        except ApiParseError as err:
            return response.error(decode_causes(err)[0].message)
        except DefaultingError as err:
            return response.invalid(defaulting_causes(err))

    return run
