"""The VirtualMachine validating admitter (``vms-admitter.go``) on a defaulted VM.

Unlike the VMI admitter it stops at the first group of checks that fails, as KubeVirt does.
"""

from __future__ import annotations

from collections.abc import Callable

from kubevirt.admission import causes as c
from kubevirt.admission import vmi_network as network
from kubevirt.admission import vmi_spec
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import has, items, obj, opt_obj, opt_text, text
from kubevirt.admission.quantity import parse_or_zero
from kubevirt.admission.review import CREATE, UPDATE
from kubevirt.admission.status import admit_vm_status
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

RUN_STRATEGIES = ("Halted", "Manual", "Always", "RerunOnFailure", "Once")
WAIT_AS_RECEIVER = "WaitAsReceiver"
# virtio-mem needs guest memory in 2 MiB blocks.
MEMORY_HOTPLUG_ALIGNMENT = 2 * 1024 * 1024


def _data_volume_templates(field: Path, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    volumes = items(obj(obj(spec, "template"), "spec"), "volumes")
    for i, template in enumerate(items(spec, "dataVolumeTemplates")):
        where = field.child("dataVolumeTemplate").index(i)
        name = text(obj(template, "metadata"), "name")
        if not name:
            out.append(
                c.required(
                    where.child("name"),
                    f"'name' field must not be empty for DataVolumeTemplate entry {where}.",
                )
            )
        referenced = any(
            text(obj(v, "persistentVolumeClaim"), "claimName") == name
            or text(obj(v, "dataVolume"), "name") == name
            for v in volumes
            if has(v, "persistentVolumeClaim") or has(v, "dataVolume")
        )
        if not referenced:
            message = (
                f"DataVolumeTemplate entry {where} must be referenced in the VMI template's 'volumes' list"
            )
            out.append(c.required(where, message))
    return out


def _run_strategy(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    out: list[StatusCause] = []
    running = has(spec, "running")
    strategy = opt_text(spec, "runStrategy")
    if running and strategy is not None:
        message = (
            "Running and RunStrategy are mutually exclusive. "
            "Note that Running is deprecated, please use RunStrategy instead"
        )
        out.append(c.invalid(field.child("running"), message))
    if not running and strategy is None:
        out.append(c.invalid(field.child("running"), "RunStrategy must be specified"))
    if strategy is not None:
        if strategy == WAIT_AS_RECEIVER:
            if not config.enabled("DecentralizedLiveMigration"):
                message = (
                    "Invalid RunStrategy (WaitAsReceiver), DecentralizedLiveMigration feature gate "
                    "is not enabled in kubevirt resource"
                )
                out.append(c.invalid(field.child("runStrategy"), message))
        elif strategy not in RUN_STRATEGIES:
            out.append(c.invalid(field.child("runStrategy"), f"Invalid RunStrategy ({strategy})"))
    return out


def _live_update(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    if not config.live_update:
        return []
    template_spec = obj(obj(spec, "template"), "spec")
    domain = obj(template_spec, "domain")
    cpu = obj(domain, "cpu")
    out: list[StatusCause] = []
    base = field.child("template", "spec")
    sockets, max_sockets = cpu.get("sockets") or 0, cpu.get("maxSockets") or 0
    if (
        isinstance(sockets, int)
        and isinstance(max_sockets, int)
        and sockets
        and max_sockets
        and sockets > max_sockets
    ):
        out.append(
            c.invalid(
                base.child("domain", "cpu", "sockets"),
                "Number of sockets in CPU topology is greater than the maximum sockets allowed",
            )
        )
    memory = obj(domain, "memory")
    if has(memory, "maxGuest"):
        out.extend(_live_update_memory(base, template_spec))
    if has(spec, "updateVolumesStrategy"):
        if not config.enabled("VolumesUpdateStrategy"):
            out.append(
                c.invalid(
                    "updateVolumesStrategy",
                    "VolumesUpdateStrategy feature gate is not enabled in kubevirt-config",
                )
            )
        if text(spec, "updateVolumesStrategy") == "Migration" and not config.enabled("VolumeMigration"):
            out.append(
                c.invalid(
                    "updateVolumesStrategy", "VolumeMigration feature gate is not enabled in kubevirt-config"
                )
            )
    return out


def _live_update_memory(base: Path, template_spec: JSON) -> list[StatusCause]:
    domain = obj(template_spec, "domain")
    cpu = obj(domain, "cpu")
    memory = obj(domain, "memory")
    out: list[StatusCause] = []
    if has(cpu, "realtime"):
        out.append(
            c.invalid(
                base.child("domain", "cpu", "realtime"), "Memory hotplug is not compatible with realtime VMs"
            )
        )
    if has(obj(cpu, "numa"), "guestMappingPassthrough"):
        out.append(
            c.invalid(
                base.child("domain", "cpu", "numa", "guestMappingPassthrough"),
                "Memory hotplug is not compatible with guest mapping passthrough",
            )
        )
    if has(domain, "launchSecurity"):
        out.append(
            c.invalid(
                base.child("domain", "launchSecurity"), "Memory hotplug is not compatible with encrypted VMs"
            )
        )
    if cpu.get("dedicatedCpuPlacement") is True:
        out.append(
            c.invalid(
                base.child("domain", "cpu", "dedicatedCpuPlacement"),
                "Memory hotplug is not compatible with dedicated CPUs",
            )
        )
    guest_field = base.child("domain", "memory", "guest")
    max_guest = parse_or_zero(memory.get("maxGuest"))
    if not has(memory, "guest"):
        out.append(c.invalid(guest_field, "Guest memory must be configured when memory hotplug is enabled"))
    else:
        guest = parse_or_zero(memory.get("guest"))
        if guest.cmp(max_guest) > 0:
            out.append(c.invalid(guest_field, "Guest memory is greater than the configured maxGuest memory"))
        elif guest.value() % MEMORY_HOTPLUG_ALIGNMENT != 0:
            out.append(c.invalid(guest_field, "Guest memory must be 2Mi aligned"))
    if max_guest.value() % MEMORY_HOTPLUG_ALIGNMENT != 0:
        out.append(c.invalid(base.child("domain", "memory", "maxGuest"), "MaxGuest must be 2Mi aligned"))
    if text(template_spec, "architecture") != "amd64":
        out.append(c.invalid(base.child("architecture"), "Memory hotplug is only available for x86_64 VMs"))
    return out


def validate_vm_spec(
    field: Path, spec: JSON, config: ClusterConfig, *, kubevirt_account: bool
) -> list[StatusCause]:
    """``ValidateVirtualMachineSpec``: the template, its data volumes, the run strategy, hotplug limits."""
    template = opt_obj(spec, "template")
    if template is None:
        return [c.required(field.child("template"), "missing virtual machine template.")]
    out: list[StatusCause] = []
    out.extend(
        vmi_spec.validate_metadata(
            field.child("template", "metadata"),
            obj(template, "metadata"),
            config,
            kubevirt_account=kubevirt_account,
        )
    )
    out.extend(vmi_spec.validate_spec(field.child("template", "spec"), obj(template, "spec"), config))
    out.extend(_data_volume_templates(field, spec))
    out.extend(_run_strategy(field, spec, config))
    out.extend(_live_update(field, spec, config))
    return out


def run_strategy(spec: JSON) -> str:
    """``VirtualMachine.RunStrategy()``: the strategy, or what the deprecated ``running`` means; "Unknown"
    when both are set (KubeVirt ignores the error that comes with it)."""
    strategy = opt_text(spec, "runStrategy")
    if has(spec, "running"):
        return "Unknown" if strategy is not None else ("Always" if spec.get("running") is True else "Halted")
    return strategy if strategy is not None else "Halted"


def data_volume_namespace_causes(vm: JSON, namespace: str, old: JSON | None) -> list[StatusCause]:
    """Embedded DataVolumes live in the VM's namespace; on updates only changed templates are checked."""
    templates = obj(vm, "spec").get("dataVolumeTemplates")
    if old is not None and templates == obj(old, "spec").get("dataVolumeTemplates"):
        return []
    target = text(obj(vm, "metadata"), "namespace") or namespace
    if not target:
        return []  # offline (virtctl validate) a namespace-less VM lands wherever it is created
    causes: list[StatusCause] = []
    for index, template in enumerate(items(obj(vm, "spec"), "dataVolumeTemplates")):
        own = text(obj(template, "metadata"), "namespace")
        if own and own != target:
            message = f"Embedded DataVolume namespace {own} differs from VM namespace {target}"
            causes.append(c.invalid(Path("spec", "dataVolumeTemplates").index(index), message))
    return causes


def _same_running_spec(old: JSON, new: JSON) -> bool:
    """``compareRunningSpec``: equal only when both set ``running`` alike or both ``runStrategy`` alike;
    any switch between the two counts as a change."""
    if has(old, "running") and has(new, "running"):
        return old.get("running") == new.get("running")
    if has(old, "runStrategy") and has(new, "runStrategy"):
        return old.get("runStrategy") == new.get("runStrategy")
    return False


def _template_volumes(spec: JSON) -> list[JSON]:
    return items(obj(obj(spec, "template"), "spec"), "volumes")


def snapshot_status_causes(vm: JSON, old: JSON | None) -> list[StatusCause]:
    """While a snapshot runs, a VM update may change neither its volumes nor its running state.

    ``old`` is ``None`` when the stored VM could not be read; KubeVirt then refuses with a cause saying so.
    """
    snapshot = opt_text(obj(vm, "status"), "snapshotInProgress")
    if snapshot is None:
        return []
    if old is None:
        return [StatusCause(c.UNEXPECTED_SERVER_RESPONSE, "Could not fetch old vm")]
    new_spec, old_spec = obj(vm, "spec"), obj(old, "spec")
    if _template_volumes(old_spec) != _template_volumes(new_spec):
        message = f'Cannot update vm disks or volumes until snapshot "{snapshot}" completes'
        return [c.not_supported(Path("spec"), message)]
    if not _same_running_spec(old_spec, new_spec):
        message = f'Cannot update vm running state until snapshot "{snapshot}" completes'
        return [c.not_supported(Path("spec"), message)]
    return []


def restore_status_causes(vm: JSON, old: JSON | None) -> list[StatusCause]:
    """While a restore runs, a VM update may change anything but its run strategy."""
    restore = opt_text(obj(vm, "status"), "restoreInProgress")
    if restore is None:
        return []
    if old is None:
        return [StatusCause(c.UNEXPECTED_SERVER_RESPONSE, "Could not fetch old vm")]
    new_spec, old_spec = obj(vm, "spec"), obj(old, "spec")
    if new_spec != old_spec and run_strategy(new_spec) != run_strategy(old_spec):
        message = f'Cannot update VM runStrategy until restore "{restore}" completes'
        return [c.not_supported(Path("spec"), message)]
    return []


def storage_status_causes(vm: JSON, old: JSON | None) -> list[StatusCause]:
    """KubeVirt's storage ``AdmitStatus`` for a VM update (the VM webhook and the status webhook): the
    snapshot lock, then the restore lock; ``vm`` is the VM as sent."""
    return snapshot_status_causes(vm, old) or restore_status_causes(vm, old)


def admit_vm(
    vm: JSON,
    config: ClusterConfig,
    *,
    operation: str,
    kubevirt_account: bool = False,
    old: JSON | None = None,
    submitted: JSON | None = None,
    running_vmi: Callable[[], JSON | None] = lambda: None,  # no VMI known
    namespace: str = "",
) -> list[StatusCause]:
    """The causes for a (defaulted) VM; the first failing group is returned alone, as KubeVirt does.

    ``submitted`` is the VM as sent, before the copy was defaulted (``vm`` when not given): volume
    requests and the snapshot/restore checks look at it, as KubeVirt's do, and compare it with ``old``,
    the stored VM on updates. ``running_vmi`` reads the VM's VMI (see :func:`admit_vm_status`); it is
    called only once the spec passed, as KubeVirt reads the VMI only then. ``namespace`` is the
    request's, for a VM whose metadata names none.
    """
    spec = obj(vm, "spec")
    # KubeVirt computes the discontinued-feature-gate causes here too, but overwrites them before
    # answering, so they never reach the user.
    if operation == CREATE:
        # KubeVirt checks the template's creation rules with the VM's own root path ("spec").
        creation = network.validate_creation(Path("spec"), obj(obj(spec, "template"), "spec"))
        if creation:
            return creation
    causes = validate_vm_spec(Path("spec"), spec, config, kubevirt_account=kubevirt_account)
    if causes:
        return causes
    as_sent = vm if submitted is None else submitted
    # KubeVirt's storage checks (embedded DataVolume namespaces, snapshot, restore) come before the
    # volume requests.
    causes = data_volume_namespace_causes(as_sent, namespace, old if operation == UPDATE else None)
    if causes:
        return causes
    if operation == UPDATE:
        causes = storage_status_causes(as_sent, old)
        if causes:
            return causes
    return admit_vm_status(as_sent, config, running_vmi=running_vmi())
