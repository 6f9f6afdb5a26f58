"""``expand-vm-spec`` (PUT a VM, namespace level) and ``virtualmachines/NAME/expand-spec`` (GET): the
VM with its instance type and preference written into its template, as KubeVirt's virt-api answers.

A given VM is refused with 400 for what is wrong with the request or the expansion; a stored VM's
expansion failure is a 500, as in KubeVirt. The instance type and preference are read from the API,
a VM's stored ControllerRevisions first (the same rules as the VM controller's).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubevirt.admission.schema import schema_check
from kubevirt.client import JSON, VIRTUAL_MACHINES, ApiError, KubeApi, NotFoundError, Resource
from kubevirt.instancetype.expand import ExpandError, expand_vm
from kubevirt.instancetype.find import FindError, find_instancetype, find_preference
from kubevirt.virt_api.rest.kube import get_or_404
from kubevirt.virt_api.rest.status import VM, StatusError, bad_request, internal
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.gojson import to_go_json
from kubevirt_api.k8s.meta_v1 import ObjectMeta

__all__ = ["VMExpander"]

UNMARSHAL_FORMAT: Final = "Can not unmarshal Request body to struct, error: {}"
INVALID_VM: Final = "Object is not a valid VirtualMachine"


def _go_json_error(text: str, err: json.JSONDecodeError) -> str:
    """encoding/json's wording for the common failures: a truncated document or a stray character."""
    if not text.strip() or err.pos >= len(text.rstrip()):
        return "unexpected end of JSON input"
    return f"invalid character {text[err.pos]!r} looking for beginning of value"


def decode_vm_body(body: bytes) -> JSON:
    """The request body as a JSON object, refused with KubeVirt's wording otherwise."""
    text = body.decode(errors="replace")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise bad_request(UNMARSHAL_FORMAT.format(_go_json_error(text, err))) from None
    if not isinstance(document, dict):
        go_type = {list: "array", str: "string", bool: "bool", type(None): "null"}.get(
            type(document), "number"
        )
        message = f"json: cannot unmarshal {go_type} into Go value of type map[string]interface {{}}"
        raise bad_request(UNMARSHAL_FORMAT.format(message))
    return document


@dataclass
class VMExpander:
    api: KubeApi
    config: Callable[[], ClusterConfig] = ClusterConfig

    def expand_given(self, namespace: str, body: bytes) -> JSON:
        """PUT ``expand-vm-spec``: the VM in the body, expanded; every failure a 400."""
        document = decode_vm_body(body)
        causes = schema_check("VirtualMachine", document)
        if causes:
            details = {"causes": [{"message": cause.message} for cause in causes]}
            raise StatusError(400, "BadRequest", INVALID_VM, details)
        try:
            vm = VirtualMachine.from_dict(document)
        except ApiParseError as err:
            raise bad_request(UNMARSHAL_FORMAT.format(err)) from None
        if not namespace:
            raise bad_request("The request namespace must not be empty")
        meta = vm.metadata
        if meta is not None and meta.namespace and meta.namespace != namespace:
            raise bad_request(f"VM namespace must be empty or {namespace}")
        vm.metadata = (meta or ObjectMeta()).model_copy(update={"namespace": namespace})
        return self._expand(vm, bad_request)

    def expand_stored(self, namespace: str, name: str) -> JSON:
        """GET ``expand-spec``: the stored VM, expanded; a failure to expand it is a 500."""
        stored = get_or_404(self.api, VIRTUAL_MACHINES, namespace, name, VM, "vm")
        try:
            vm = VirtualMachine.from_dict(stored)
        except ApiParseError as err:
            raise internal(str(err)) from None
        return self._expand(vm, internal)

    def _expand(self, vm: VirtualMachine, refuse: Callable[[str], StatusError]) -> JSON:
        try:
            instancetype = find_instancetype(vm, self._get)
            preference = find_preference(vm, self._get)
            expanded = expand_vm(
                vm,
                instancetype.spec if instancetype is not None else None,
                preference.spec if preference is not None else None,
                self.config(),
            )
        except (FindError, ExpandError) as err:
            raise refuse(str(err)) from None
        except ApiError as err:
            raise refuse(err.message) from None
        return to_go_json(expanded)  # what Go's encoder writes for the VirtualMachine struct

    def _get(self, resource: Resource, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        try:
            return self.api.get(resource, namespace, name)
        except NotFoundError:
            return None
