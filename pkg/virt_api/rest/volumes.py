"""The ``addvolume`` and ``removevolume`` subresources of VMs and VMIs (volume hotplug).

On a VMI the request patches the VMI's volumes and disks at once (ephemeral hotplug). On a VM, with
HotplugVolumes on, it is queued in ``status.volumeRequests`` for the VM controller, which applies it to
the VMI and the template; with only DeclarativeHotplugVolumes on it patches the VM's template directly.
Each answers 202 once its one patch is accepted. A patch whose ``test`` failed (someone changed the
lists meanwhile) comes back as the API server's 422, which virtctl retries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, ApiError, Resource
from kubevirt.log import get_logger
from kubevirt.virt_api.rest import volume_requests as requests
from kubevirt.virt_api.rest.gated import HOTPLUG_DISABLED
from kubevirt.virt_api.rest.kube import SubresourceKube, get_or_404
from kubevirt.virt_api.rest.lifecycle import vmi_phase
from kubevirt.virt_api.rest.status import VM, VMI, StatusError, bad_request, conflict, internal
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1 import VirtualMachineInstancePhase
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.view import JSON

ACCEPTED = 202
HOTPLUG_VOLUMES, DECLARATIVE_HOTPLUG_VOLUMES = "HotplugVolumes", "DeclarativeHotplugVolumes"
VMI_NOT_RUNNING = "VMI is not running"
TEMPLATE_PREFIX = "/spec/template"
REASON_INVALID = "Invalid"
VM_API_VERSION = f"{GROUP_NAME}/v1"


@dataclass
class VolumeHotplug:
    api: SubresourceKube
    config: Callable[[], ClusterConfig] = ClusterConfig

    def check_enabled(self) -> None:
        """A 400 unless one of the hotplug gates is on (checked before the body is read)."""
        current = self.config()
        if not (current.enabled(HOTPLUG_VOLUMES) or current.enabled(DECLARATIVE_HOTPLUG_VOLUMES)):
            raise bad_request(HOTPLUG_DISABLED)

    def add(self, namespace: str, name: str, body: bytes, *, ephemeral: bool) -> int:
        """``ephemeral``: the VMI subresource; otherwise the VM's."""
        self.check_enabled()
        self._submit(namespace, name, requests.decode_add_volume(body), ephemeral)
        return ACCEPTED

    def remove(self, namespace: str, name: str, body: bytes, *, ephemeral: bool) -> int:
        self.check_enabled()
        self._submit(namespace, name, requests.decode_remove_volume(body), ephemeral)
        return ACCEPTED

    # Internals.

    def _submit(self, namespace: str, name: str, request: requests.VolumeRequest, ephemeral: bool) -> None:
        hotplug_volumes = self.config().enabled(HOTPLUG_VOLUMES)
        if ephemeral:
            self._patch_vmi(namespace, name, request, hotplug_volumes)
        elif hotplug_volumes:
            self._patch_vm_status(namespace, name, request)
        else:
            self._patch_vm_template(namespace, name, request)

    def _patch_vmi(
        self, namespace: str, name: str, request: requests.VolumeRequest, hotplug_volumes: bool
    ) -> None:
        vmi = get_or_404(self.api, VIRTUAL_MACHINE_INSTANCES, namespace, name, VMI, "vmi")
        # A VM's VMI changes through its VM, unless ephemeral hotplug (HotplugVolumes) is on.
        if _owned_by_vm(vmi) and not hotplug_volumes:
            raise bad_request(f"VMI {namespace}/{name} is owned by a VM")
        if vmi_phase(vmi) != VirtualMachineInstancePhase.RUNNING:
            raise conflict(VMI, name, VMI_NOT_RUNNING)
        spec = vmi.get("spec") or {}
        patch = _fitting(VMI, name, spec, request, lambda: requests.spec_patch("", spec, request))
        self._patch(VIRTUAL_MACHINE_INSTANCES, vmi, patch, request, subresource=None, what="vmi")

    def _patch_vm_status(self, namespace: str, name: str, request: requests.VolumeRequest) -> None:
        vm = get_or_404(self.api, VIRTUAL_MACHINES, namespace, name, VM, "vm")
        template = _template_spec(vm)
        patch = _fitting(VM, name, template, request, lambda: requests.status_patch(vm, request))
        self._patch(VIRTUAL_MACHINES, vm, patch, request, subresource="status", what="vm status")

    def _patch_vm_template(self, namespace: str, name: str, request: requests.VolumeRequest) -> None:
        vm = get_or_404(self.api, VIRTUAL_MACHINES, namespace, name, VM, "vm")
        template = _template_spec(vm)
        patch = _fitting(
            VM, name, template, request, lambda: requests.spec_patch(TEMPLATE_PREFIX, template, request)
        )
        self._patch(VIRTUAL_MACHINES, vm, patch, request, subresource=None, what="vm")

    def _patch(
        self,
        resource: Resource,
        obj: JSON,
        patch: requests.Patch,
        request: requests.VolumeRequest,
        *,
        subresource: str | None,
        what: str,
    ) -> None:
        meta = obj["metadata"]
        get_logger().debug(
            f"patching {what}",
            kind=resource.kind,
            namespace=meta.get("namespace"),
            name=meta["name"],
            uid=meta.get("uid"),
            patch=patch,
        )
        try:
            self.api.patch(
                resource,
                meta.get("namespace"),
                meta["name"],
                patch,
                subresource=subresource,
                dry_run=request.dry_run,
            )
        except ApiError as err:
            get_logger().error(f"unable to patch {what}", name=meta["name"], reason=err.message)
            if _is_invalid(err):  # a failed ``test`` or a refused object: the server's answer as it is
                raise StatusError(err.status, REASON_INVALID, err.message) from None
            raise internal(f"unable to patch {what}: {err.message}") from None


def _template_spec(vm: JSON) -> JSON:
    return dict(((vm.get("spec") or {}).get("template") or {}).get("spec") or {})


def _fitting(
    kind: str, name: str, spec: JSON, request: requests.VolumeRequest, build: Callable[[], requests.Patch]
) -> requests.Patch:
    """Checks the request against the spec's volumes, then builds its patch; a request that does not fit
    either is KubeVirt's 409 saying why."""
    try:
        requests.verify_volume_option(list(spec.get("volumes") or []), request)
        return build()
    except requests.VolumeRequestError as err:
        raise conflict(kind, name, str(err)) from None


def _owned_by_vm(vmi: JSON) -> bool:
    for owner in (vmi.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller") is True:
            return bool(owner.get("kind") == "VirtualMachine" and owner.get("apiVersion") == VM_API_VERSION)
    return False


def _is_invalid(err: ApiError) -> bool:
    """apimachinery's ``IsInvalid``: the reason, or a 422 that came without one."""
    return err.reason == REASON_INVALID or (err.status == 422 and not err.reason)
