"""The VM lifecycle subresources: start, stop, restart and migrate.

Each answers 202 once its one write (a status or spec patch of the VM, a migration object) is accepted;
refusals are :class:`StatusError` with KubeVirt's codes and messages. Every handler runs off the event
loop: it blocks on the API server.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubevirt.client import (
    JSON,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ApiError,
    NotFoundError,
)
from kubevirt.log import get_logger
from kubevirt.virt_api.rest import state_change as changes
from kubevirt.virt_api.rest.bodies import Options
from kubevirt.virt_api.rest.kube import SubresourceKube, get_or_404, patch_failure
from kubevirt.virt_api.rest.status import VM, VMI, bad_request, conflict, internal
from kubevirt_api.core.v1 import FINAL_VMI_PHASES, VirtualMachineInstancePhase

ACCEPTED = 202
VM_NOT_RUNNING = "VM is not running"
MANUAL_RECOVERY_REQUIRED = (
    "VM recovery required: Volume migration failed, leaving some volumes pointing to non-consistent "
    "targets; manual intervention is needed to reassign them to their original volumes."
)
MIGRATION_GENERATE_NAME = "kubevirt-migrate-vm-"
_Phase = VirtualMachineInstancePhase


def vmi_phase(vmi: JSON | None) -> str:
    return str(((vmi or {}).get("status") or {}).get("phase") or "")


def is_final(vmi: JSON | None) -> bool:
    return vmi_phase(vmi) in FINAL_VMI_PHASES


def has_condition(obj: JSON, type_: str, status: str | None = None) -> bool:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_ and (status is None or condition.get("status") == status):
            return True
    return False


def uid_of(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


@dataclass
class VMLifecycle:
    api: SubresourceKube

    def start(self, namespace: str, name: str, options: Options) -> int:
        vm = get_or_404(self.api, VIRTUAL_MACHINES, namespace, name, VM, "vm")
        vmi = self._vmi(namespace, name)
        if (
            vmi is not None
            and not is_final(vmi)
            and vmi_phase(vmi) not in (_Phase.UNKNOWN, _Phase.VM_PHASE_UNSET)
        ):
            raise conflict(VM, name, "VM is already running")
        if has_condition(vm, "ManualRecoveryRequired", "True"):
            raise conflict(VM, name, MANUAL_RECOVERY_REQUIRED)
        data = changes.PAUSED_DATA if options.paused else None
        strategy = _run_strategy(vm)
        if strategy == changes.HALTED:
            if options.paused:
                self._patch_status(vm, [changes.start_request(data)], options)
            else:
                self._patch_spec(vm, changes.running_patch(vm, True), options)
        elif strategy in (changes.MANUAL, changes.RERUN_ON_FAILURE):
            phase = vmi_phase(vmi) if vmi is not None else None
            rerun = strategy == changes.RERUN_ON_FAILURE
            if (rerun and phase == _Phase.SUCCEEDED) or (not rerun and vmi is not None and is_final(vmi)):
                assert vmi is not None
                requests = [changes.stop_request(uid_of(vmi)), changes.start_request(data)]
            elif rerun and phase == _Phase.FAILED:
                raise conflict(
                    VM, name, f"{changes.RERUN_ON_FAILURE} does not support starting VM from failed state"
                )
            else:
                requests = [changes.start_request(data)]
            self._patch_status(vm, requests, options)
        elif strategy in (changes.ALWAYS, changes.ONCE):
            raise conflict(VM, name, f"{strategy} does not support manual start requests")
        return ACCEPTED

    def stop(self, namespace: str, name: str, options: Options) -> int:
        vm = get_or_404(self.api, VIRTUAL_MACHINES, namespace, name, VM, "vm")
        strategy = _run_strategy(vm)
        vmi = self._vmi(namespace, name)
        running = vmi is not None and not is_final(vmi)
        old_grace: int | None = None
        if running and options.grace_period is not None:
            assert vmi is not None
            old_grace = (vmi.get("spec") or {}).get("terminationGracePeriodSeconds")
            try:
                self.api.patch(
                    VIRTUAL_MACHINE_INSTANCES,
                    namespace,
                    name,
                    changes.grace_period_patch(vmi, options.grace_period),
                    dry_run=options.is_dry_run,
                )
            except ApiError as err:
                raise internal(err.message) from None
        if strategy == changes.HALTED:
            if not running:
                raise conflict(VM, name, VM_NOT_RUNNING)
            shorter = options.grace_period is not None and (
                old_grace is None or options.grace_period < old_grace
            )
            if not shorter:
                raise conflict(
                    VM,
                    name,
                    f"{changes.HALTED} only supports manual stop requests with a shorter graceperiod",
                )
            assert vmi is not None
            self._patch_status(vm, [changes.stop_request(uid_of(vmi))], options)
        elif strategy in (changes.MANUAL, changes.RERUN_ON_FAILURE):
            if not running:
                raise conflict(VM, name, VM_NOT_RUNNING)
            assert vmi is not None
            self._patch_status(vm, [changes.stop_request(uid_of(vmi))], options)
        elif strategy in (changes.ALWAYS, changes.ONCE):
            self._patch_spec(vm, changes.running_patch(vm, False), options)
        return ACCEPTED

    def restart(self, namespace: str, name: str, options: Options) -> int:
        grace = options.grace_period
        if grace is not None and grace > 0:
            raise bad_request("For force restart, only gracePeriod=0 is supported for now")
        if grace is not None and grace < 0:
            raise bad_request("gracePeriod has to be greater or equal to 0")
        vm = get_or_404(self.api, VIRTUAL_MACHINES, namespace, name, VM, "vm")
        if has_condition(vm, "VolumesChange", "True"):
            raise conflict(VM, name, MANUAL_RECOVERY_REQUIRED)
        strategy = _run_strategy(vm)
        if strategy in (changes.HALTED, changes.ONCE):
            raise conflict(VM, name, f"RunStategy {strategy} does not support manual restart requests")
        vmi = self._vmi(namespace, name)
        if vmi is None:
            raise conflict(VM, name, f"{VM_NOT_RUNNING}: {changes.HALTED}")
        self._patch_status(vm, [changes.stop_request(uid_of(vmi)), changes.start_request()], options)
        if grace == 0:
            self._delete_launcher_pod(namespace, vmi)
        return ACCEPTED

    def migrate(self, namespace: str, name: str, options: Options) -> int:
        get_or_404(self.api, VIRTUAL_MACHINES, namespace, name, VM, "vm")
        vmi = get_or_404(self.api, VIRTUAL_MACHINE_INSTANCES, namespace, name, VMI, "vmi")
        if vmi_phase(vmi) != _Phase.RUNNING:
            raise conflict(VM, name, VM_NOT_RUNNING)
        spec: JSON = {"vmiName": name}
        if options.added_node_selector:
            spec["addedNodeSelector"] = dict(options.added_node_selector)
        migration: JSON = {
            "apiVersion": VIRTUAL_MACHINE_INSTANCE_MIGRATIONS.api_version,
            "kind": VIRTUAL_MACHINE_INSTANCE_MIGRATIONS.kind,
            "metadata": {"generateName": MIGRATION_GENERATE_NAME},
            "spec": spec,
        }
        try:
            self.api.create(
                VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, migration, dry_run=options.is_dry_run
            )
        except ApiError as err:
            raise internal(err.message) from None
        return ACCEPTED

    # Internals.

    def _vmi(self, namespace: str, name: str) -> JSON | None:
        try:
            return self.api.get(VIRTUAL_MACHINE_INSTANCES, namespace, name)
        except NotFoundError:
            return None
        except ApiError as err:
            raise internal(err.message) from None

    def _patch_status(self, vm: JSON, requests: list[JSON], options: Options) -> None:
        try:
            patch = changes.state_change_patch(vm, *requests)
        except changes.UnderwayError as err:
            raise internal(str(err)) from None
        self._patch(vm, patch, options, subresource="status")

    def _patch_spec(self, vm: JSON, patch: changes.Patch, options: Options) -> None:
        self._patch(vm, patch, options, subresource=None)

    def _patch(self, vm: JSON, patch: changes.Patch, options: Options, *, subresource: str | None) -> None:
        meta = vm["metadata"]
        get_logger().debug(
            "patching VM",
            kind="VirtualMachine",
            namespace=meta.get("namespace"),
            name=meta["name"],
            uid=meta.get("uid"),
            subresource=subresource or "",
            patch=patch,
        )
        try:
            self.api.patch(
                VIRTUAL_MACHINES,
                meta.get("namespace"),
                meta["name"],
                patch,
                subresource=subresource,
                dry_run=options.is_dry_run,
            )
        except ApiError as err:
            raise patch_failure(VM, meta["name"], err, conflict) from None

    def _delete_launcher_pod(self, namespace: str, vmi: JSON) -> None:
        """A forced restart: the launcher pod goes at once (grace 1 s) instead of waiting for the guest."""
        selector = f"kubevirt.io=virt-launcher,kubevirt.io/created-by={uid_of(vmi)}"
        try:
            pods, _ = self.api.list(PODS, namespace, label_selector=selector)
        except ApiError as err:
            raise internal(err.message) from None
        pod_name = _running_launcher(pods, vmi)
        if pod_name is None:
            return
        try:
            self.api.delete(PODS, namespace, pod_name, grace_period_seconds=1)
        except NotFoundError:
            return
        except ApiError as err:
            raise internal(err.message) from None


def _run_strategy(vm: JSON) -> str:
    try:
        return changes.run_strategy(vm)
    except changes.RunStrategyError as err:
        raise internal(str(err)) from None


def _running_launcher(pods: list[JSON], vmi: JSON) -> str | None:
    """The running launcher pod; during a completed migration, its target."""
    running = [
        str(pod["metadata"]["name"]) for pod in pods if (pod.get("status") or {}).get("phase") == "Running"
    ]
    if len(running) <= 1:
        return running[0] if running else None
    migration = (vmi.get("status") or {}).get("migrationState") or {}
    if not migration.get("completed"):
        return running[0]
    target = str(migration.get("targetPod") or "")
    return target if target in running else None
