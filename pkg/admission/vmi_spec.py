"""``ValidateVirtualMachineInstanceSpec`` and the other VMI-level rule groups, in KubeVirt's order.

The same spec rules apply to a VMI (field ``spec``) and to the templates of VMs, replica sets and pools
(field ``spec.template.spec``); the caller chooses the root path.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re

from kubevirt.admission import causes as c
from kubevirt.admission import k8s_scheduling as scheduling
from kubevirt.admission import vmi_compute as compute
from kubevirt.admission import vmi_devices as devices_rules
from kubevirt.admission import vmi_dra as dra
from kubevirt.admission import vmi_network as network
from kubevirt.admission import vmi_volumes as volumes_rules
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import has, items, obj, opt_flag, opt_obj, opt_text, string_map, text
from kubevirt.admission.k8s_names import dns1123_label, dns1123_subdomain
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

MAX_STR_LEN = 256
MAX_DNS_NAMESERVERS = 3
MAX_DNS_SEARCH_PATHS = 6
MAX_DNS_SEARCH_LIST_CHARS = 256
_IO_THREADS_POLICIES = ("shared", "auto", "supplementalPool")
_EVICTION_STRATEGIES = ("LiveMigrate", "LiveMigrateIfPossible", "None", "External")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None", "")
_SUPPORTED_ARCHITECTURES = ("amd64", "arm64", "s390x")
_VALID_SERIAL = re.compile(r"^[A-Za-z0-9_.+-]+$")
# Labels only KubeVirt's own components may set on a VMI.
RESERVED_LABELS = (
    "kubevirt.io/created-by",
    "kubevirt.io/migrationJobUID",
    "kubevirt.io/nodeName",
    "kubevirt.io/migrationTargetNodeName",
    "kubevirt.io/schedulable",
    "kubevirt.io/install-strategy",
)
IGNITION_ANNOTATION = "kubevirt.io/ignitiondata"
SIDECAR_ANNOTATION = "hooks.kubevirt.io/hookSidecars"
HOST_ARCHITECTURE = "amd64"


def _hostname(field: Path, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    hostname = text(spec, "hostname")
    if hostname:
        errors = dns1123_label(hostname)
        if errors:
            where = field.child("hostname")
            message = f"{where} does not conform to the kubernetes DNS_LABEL rules : {', '.join(errors)}"
            out.append(c.invalid(where, message))
    subdomain = text(spec, "subdomain")
    if subdomain:
        errors = dns1123_subdomain(subdomain)
        if errors:
            where = field.child("subdomain")
            message = f"{where} does not conform to the kubernetes DNS_SUBDOMAIN rules : {', '.join(errors)}"
            out.append(c.invalid(where, message))
    return out


def _go_list(values: tuple[str, ...]) -> str:
    return "[" + " ".join(values) + "]"


def _emulated_machine(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    machine_type = text(obj(obj(spec, "domain"), "machine"), "type")
    if not machine_type:
        return []
    supported = config.machines_for(text(spec, "architecture"))
    if any(fnmatch.fnmatchcase(machine_type, pattern) for pattern in supported):
        return []
    where = field.child("domain", "machine", "type")
    return [
        c.invalid(where, f"{where} is not supported: {machine_type} (allowed values: {_go_list(supported)})")
    ]


def _firmware_serial(field: Path, domain: JSON) -> list[StatusCause]:
    serial = text(obj(domain, "firmware"), "serial")
    if not serial:
        return []
    where = field.child("domain", "firmware", "serial")
    out: list[StatusCause] = []
    if len(serial) > MAX_STR_LEN:
        out.append(
            c.invalid(where, f"{where} must be less than or equal to {MAX_STR_LEN} in length, if specified")
        )
    if not _VALID_SERIAL.match(serial):
        out.append(
            c.invalid(
                where, f"{where} must be made up of the following characters [A-Za-z0-9_.+-], if specified"
            )
        )
    return out


def _firmware_acpi(field: Path, spec: JSON) -> list[StatusCause]:
    acpi = opt_obj(obj(obj(spec, "domain"), "firmware"), "acpi")
    if acpi is None:
        return []
    slic, msdm = text(acpi, "slicNameRef"), text(acpi, "msdmNameRef")
    if not slic and not msdm:
        return [c.invalid(field, "ACPI was set but no SLIC nor MSDM volume reference was set")]
    out: list[StatusCause] = []
    for name_ref, key in ((slic, "slicNameRef"), (msdm, "msdmNameRef")):
        if not name_ref:
            continue
        match = next((v for v in items(spec, "volumes") if text(v, "name") == name_ref), None)
        if match is None:
            out.append(c.invalid(field.child(key), f"{field} does not have a matching Volume."))
        elif not has(match, "secret"):
            out.append(c.invalid(field.child(key), f"{field} refers to Volume of unsupported type."))
    return out


def _start_strategy(field: Path, spec: JSON) -> list[StatusCause]:
    strategy = opt_text(spec, "startStrategy")
    if strategy is None:
        return []
    where = field.child("startStrategy")
    if strategy != "Paused":
        return [c.invalid(where, f"{where} is set with an unrecognized option: {strategy}")]
    if has(spec, "livenessProbe"):
        message = (
            f"either {where} or {field.child('livenessProbe')} should be "
            "provided.Pausing VMI with LivenessProbe is not supported"
        )
        return [c.invalid(where, message)]
    return []


def _architecture(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    architecture = text(spec, "architecture")
    if architecture and architecture != HOST_ARCHITECTURE and not config.enabled("MultiArchitecture"):
        where = field.child("architecture")
        return [
            c.required(
                where,
                f"MultiArchitecture feature gate is not enabled in kubevirt-config, invalid entry {where}",
            )
        ]
    return []


def _io_threads_policy(field: Path, domain: JSON) -> list[StatusCause]:
    if not has(domain, "ioThreadsPolicy"):
        return []
    policy = text(domain, "ioThreadsPolicy")
    out: list[StatusCause] = []
    if policy not in _IO_THREADS_POLICIES:
        out.append(c.invalid(field.child("domain", "ioThreadsPolicy"), f"Invalid IOThreadsPolicy ({policy})"))
    count = obj(domain, "ioThreads").get("supplementalPoolThreadCount")
    if policy == "supplementalPool" and (not isinstance(count, int) or count < 1):
        out.append(
            c.invalid(
                field.child("domain", "ioThreads", "count"),
                "the number of iothreads needs to be set and positive for the dedicated policy",
            )
        )
    return out


def _probe(where: Path, probe: JSON | None) -> list[StatusCause]:
    if probe is None:
        return []
    handlers = sum(1 for key in ("httpGet", "tcpSocket", "exec", "guestAgentPing") if has(probe, key))
    out: list[StatusCause] = []
    if handlers > 1:
        out.append(c.invalid(where, f"{where} must have exactly one probe type set"))
    if handlers < 1:
        message = (
            f"either {where.child('tcpSocket')}, {where.child('exec')} or {where.child('httpGet')} "
            f"must be set if a {where} is specified"
        )
        out.append(c.required(where, message))
    return out


def _probes_need_pod_network(field: Path, spec: JSON) -> list[StatusCause]:
    if network.pod_network(spec) is not None:
        return []
    out: list[StatusCause] = []
    for key in ("readinessProbe", "livenessProbe"):
        probe = opt_obj(spec, key)
        if probe is None:
            continue
        for handler in ("httpGet", "tcpSocket"):
            if has(probe, handler):
                where = field.child(key, handler)
                out.append(c.invalid(where, f"{where} is only allowed if the Pod Network is attached"))
    return out


def _domain(field: Path, domain: JSON) -> list[StatusCause]:
    """``validateDomainSpec``: disks, firmware, and SecureBoot needing SMM."""
    out = devices_rules.disks(field.child("devices", "disks"), items(obj(domain, "devices"), "disks"))
    out.extend(validate_firmware(field.child("firmware"), opt_obj(domain, "firmware")))
    if _secure_boot(domain) and not _smm_enabled(domain):
        message = f"{field} has EFI SecureBoot enabled. SecureBoot requires SMM, which is currently disabled."
        out.append(c.invalid(field, message))
    return out


def validate_firmware(field: Path, firmware: JSON | None) -> list[StatusCause]:
    """``validateFirmware``: BIOS and EFI exclude each other; a kernel boot is complete."""
    if firmware is None:
        return []
    out: list[StatusCause] = []
    bootloader = opt_obj(firmware, "bootloader")
    if bootloader is not None and has(bootloader, "efi") and has(bootloader, "bios"):
        where = field.child("bootloader")
        out.append(
            c.invalid(where, f"{where} has both EFI and BIOS configured, but they are mutually exclusive.")
        )
    out.extend(_kernel_boot(field.child("kernelBoot"), opt_obj(firmware, "kernelBoot")))
    return out


def _efi(domain: JSON) -> JSON | None:
    return opt_obj(obj(obj(domain, "firmware"), "bootloader"), "efi")


def _secure_boot(domain: JSON) -> bool:
    efi = _efi(domain)
    return efi is not None and opt_flag(efi, "secureBoot") is not False


def _smm_enabled(domain: JSON) -> bool:
    smm = opt_obj(obj(domain, "features"), "smm")
    return smm is not None and opt_flag(smm, "enabled") is not False


def _kernel_boot(field: Path, kernel_boot: JSON | None) -> list[StatusCause]:
    if kernel_boot is None:
        return []
    container = opt_obj(kernel_boot, "container")
    if container is None:
        if text(kernel_boot, "kernelArgs"):
            return [
                c.invalid(
                    field.child("kernelArgs"),
                    "kernel arguments cannot be provided without an external kernel",
                )
            ]
        return []
    where = field.child("container")
    out: list[StatusCause] = []
    if not text(container, "image"):
        out.append(c.required(where.child("image"), f"{where} must be defined with an image"))
    kernel, initrd = text(container, "kernelPath"), text(container, "initrdPath")
    if not kernel and not initrd:
        message = f"{where} must be defined with at least one of the following: kernelPath, initrdPath"
        out.append(c.required(where, message))
    if kernel:
        out.extend(volumes_rules.validate_path(where.child("kernelPath"), kernel))
    if initrd:
        out.extend(volumes_rules.validate_path(where.child("initrdPath"), initrd))
    return out


def _dns(field: Path, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    policy = text(spec, "dnsPolicy")
    if policy and policy not in _DNS_POLICIES:
        valid = "[" + " ".join(_DNS_POLICIES) + "]"
        out.append(
            c.not_supported(
                field.child("dnsPolicy"), f"DNSPolicy: {policy} is not supported, valid values: {valid}"
            )
        )
    config = opt_obj(spec, "dnsConfig")
    where = field.child("dnsConfig")
    if policy == "None":
        if config is None:
            out.append(c.required(where, "must provide `dnsConfig` when `dnsPolicy` is None"))
            return out
        if not config.get("nameservers"):
            out.append(
                c.required("nameservers", "must provide at least one DNS nameserver when `dnsPolicy` is None")
            )
            return out
    if config is None:
        return out
    nameservers = [str(n) for n in config.get("nameservers") or [] if n is not None]
    if len(nameservers) > MAX_DNS_NAMESERVERS:
        listing = "[" + " ".join(nameservers) + "]"
        out.append(
            c.invalid("nameservers", f"must not have more than {MAX_DNS_NAMESERVERS} nameservers: {listing}")
        )
    for server in nameservers:
        try:
            ipaddress.ip_address(server)
        except ValueError:
            out.append(c.invalid("nameservers", f"must be valid IP address: {server}"))
    searches = [str(s) for s in config.get("searches") or [] if s is not None]
    if len(searches) > MAX_DNS_SEARCH_PATHS:
        out.append(c.invalid("searchDomains", f"must not have more than {MAX_DNS_SEARCH_PATHS} search paths"))
    if len(" ".join(searches)) > MAX_DNS_SEARCH_LIST_CHARS:
        message = (
            f"must not have more than {MAX_DNS_SEARCH_LIST_CHARS} "
            "characters (including spaces) in the search list"
        )
        out.append(c.invalid("searchDomains", message))
    for search in searches:
        out.extend(c.invalid("searchDomains", message) for message in dns1123_subdomain(search))
    for option in items(config, "options"):
        if not text(option, "name"):
            out.append(c.invalid("options", "Option.Name must not be empty"))
    return out


def _eviction_strategy(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    strategy = opt_text(spec, "evictionStrategy")
    effective = strategy if strategy is not None else config.eviction_strategy
    if effective is None or effective in _EVICTION_STRATEGIES:
        return []
    where = field.child("evictionStrategy")
    return [c.invalid(where, f"{where} is set with an unrecognized option: {strategy}")]


def _launch_security(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    domain = obj(spec, "domain")
    launch = opt_obj(domain, "launchSecurity")
    if launch is None:
        return []
    where = field.child("launchSecurity")
    out: list[StatusCause] = []
    if not config.enabled("SecureExecution") and text(spec, "architecture") == "s390x":
        out.append(c.invalid(where, "SecureExecution feature gate is not enabled in kubevirt-config"))
    sev = opt_obj(launch, "sev")
    if sev is not None and not config.enabled("WorkloadEncryptionSEV"):
        out.append(c.invalid(where, "WorkloadEncryptionSEV feature gate is not enabled in kubevirt-config"))
    elif sev is not None:
        if _efi(domain) is None:
            out.append(c.invalid(where, "SEV requires OVMF (UEFI)"))
        elif _secure_boot(domain):
            out.append(c.invalid(where, "SEV does not work along with SecureBoot"))
        if has(sev, "attestation") and text(spec, "startStrategy") != "Paused":
            out.append(c.invalid(where, "SEV attestation requires VMI StartStrategy 'Paused'"))
        for iface in items(obj(domain, "devices"), "interfaces"):
            if has(iface, "bootOrder"):
                out.append(c.invalid(where, f"SEV does not work with bootable NICs: {text(iface, 'name')}"))
    return out


def validate_spec(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    """``ValidateVirtualMachineInstanceSpec``: the rules shared by VMIs and every template."""
    domain = obj(spec, "domain")
    devices = obj(domain, "devices")
    res = compute.Resources(domain)
    out: list[StatusCause] = []
    out.extend(_hostname(field, spec))
    out.extend(compute.memory_requests(field, res))
    out.extend(compute.memory_limits(field, res))
    out.extend(compute.hugepages_requests(field, domain, res))
    out.extend(compute.guest_memory_limit(field, domain, res, config))
    out.extend(_emulated_machine(field, spec, config))
    out.extend(_firmware_serial(field, domain))
    out.extend(_firmware_acpi(field.child("acpi"), spec))
    out.extend(compute.cpu_requests_and_limits(field, res))
    out.extend(compute.cpu_pinning(field, spec, res, config))
    out.extend(compute.numa(field, domain, config))
    out.extend(compute.isolate_emulator_thread(field, domain))
    out.extend(compute.cpu_feature_policies(field, domain))
    out.extend(compute.cpu_hotplug(field, domain))
    out.extend(_start_strategy(field, spec))
    out.extend(compute.realtime(field, domain))
    out.extend(scheduling.affinity(field, spec))
    out.extend(scheduling.topology_spread_constraints(field, spec))
    out.extend(_architecture(field, spec, config))
    out.extend(network.validate(field, spec, config))
    out.extend(dra.gpus(field, spec, config))
    out.extend(devices_rules.boot_order(field, spec, config))
    out.extend(devices_rules.inputs(field, devices))
    out.extend(_io_threads_policy(field, domain))
    out.extend(_probe(field.child("readinessProbe"), opt_obj(spec, "readinessProbe")))
    out.extend(_probe(field.child("livenessProbe"), opt_obj(spec, "livenessProbe")))
    out.extend(_probes_need_pod_network(field, spec))
    out.extend(_domain(field.child("domain"), domain))
    out.extend(volumes_rules.volumes(field.child("volumes"), items(spec, "volumes"), config))
    out.extend(volumes_rules.container_disks(field, spec))
    out.extend(volumes_rules.access_credentials(field.child("accessCredentials"), spec))
    out.extend(_dns(field, spec))
    out.extend(_eviction_strategy(field, spec, config))
    out.extend(devices_rules.gpus_ramfb(field, devices))
    out.extend(devices_rules.host_devices(field, devices, config))
    out.extend(devices_rules.sound(field, devices))
    out.extend(_launch_security(field, spec, config))
    out.extend(devices_rules.vsock(field, devices, config))
    out.extend(devices_rules.persistent_reservation(field, devices, config))
    out.extend(devices_rules.downward_metrics_device(field, devices, config))
    out.extend(volumes_rules.filesystems(field, spec, config))
    out.extend(devices_rules.video(field, devices, config))
    out.extend(devices_rules.panic_devices(field, spec, devices, config))
    return out


def validate_metadata(
    field: Path, metadata: JSON, config: ClusterConfig, *, kubevirt_account: bool
) -> list[StatusCause]:
    """``ValidateVirtualMachineInstanceMetadata``: reserved labels and feature-gated annotations."""
    out: list[StatusCause] = []
    labels = string_map(metadata, "labels")
    annotations = string_map(metadata, "annotations")
    if not kubevirt_account and any(label in labels for label in RESERVED_LABELS):
        out.append(
            c.not_supported(
                field.child("labels"),
                "creation of the following reserved kubevirt.io/ labels on a VMI object is prohibited",
            )
        )
    if annotations.get(IGNITION_ANNOTATION) and not config.enabled("ExperimentalIgnitionSupport"):
        entry = field.child("annotations", IGNITION_ANNOTATION)
        message = (
            "ExperimentalIgnitionSupport feature gate is not "
            f"enabled in kubevirt-config, invalid entry {entry}"
        )
        out.append(c.invalid(field.child("annotations"), message))
    if annotations.get(SIDECAR_ANNOTATION) and not config.enabled("Sidecar"):
        entry = field.child("annotations", SIDECAR_ANNOTATION)
        out.append(
            c.invalid(
                field.child("annotations"),
                f"sidecar feature gate is not enabled in kubevirt-config, invalid entry {entry}",
            )
        )
    return out


def _feature_enabled(state: object) -> bool:
    return isinstance(state, dict) and state.get("enabled") is True


def validate_hyperv(field: Path, spec: JSON) -> list[StatusCause]:
    """``ValidateVirtualMachineInstanceHyperv``: feature dependencies and passthrough exclusivity.

    KubeVirt passes the hyperv path as ``field`` and then appends ``domain.features.hyperv`` again for
    the dependency causes; the doubled path is reproduced on purpose.
    """
    features = obj(obj(spec, "domain"), "features")
    hyperv = opt_obj(features, "hyperv")
    out: list[StatusCause] = []
    if hyperv is not None:
        base = field.child("domain", "features", "hyperv")
        # (feature, the feature it needs), leaves first as KubeVirt checks them.
        dependencies = (
            ("evmcs", "vapic"),
            ("ipi", "vpindex"),
            ("tlbflush", "vpindex"),
            ("synictimer", "synic"),
            ("synic", "vpindex"),
        )
        for feature, needed in dependencies:
            if _feature_enabled(hyperv.get(feature)) and not _feature_enabled(hyperv.get(needed)):
                message = f"'{base.child(feature)}' requires '{base.child(needed)}', which was disabled."
                out.append(c.invalid(base.child(feature), message))
        evmcs = opt_obj(hyperv, "evmcs")
        if evmcs is not None and opt_flag(evmcs, "enabled") is not False:
            cpu_features = items(obj(obj(spec, "domain"), "cpu"), "features")
            if not cpu_features:
                out.append(
                    c.required("spec.domain.cpu.features", "vmx cpu feature is required when evmcs is set")
                )
            for i, cpu_feature in enumerate(cpu_features):
                if text(cpu_feature, "name") == "vmx" and text(cpu_feature, "policy") != "require":
                    out.append(
                        c.invalid(
                            f"spec.domain.cpu.features[{i}].policy",
                            "vmx cpu feature has to be set to require policy",
                        )
                    )
    if hyperv is not None and has(features, "hypervPassthrough"):
        message = (
            "Cannot explicitly set hyperV features if HypervPassthrough is being used. "
            "Please use either HyperV or HypervPassthrough."
        )
        out.append(c.invalid(field, message))
    return out


def validate_per_arch(field: Path, spec: JSON) -> list[StatusCause]:
    """``ValidateVirtualMachineInstancePerArch``."""
    architecture = text(spec, "architecture")
    devices = obj(obj(spec, "domain"), "devices")
    if architecture == "amd64":
        return devices_rules.amd64_settings(field, devices)
    if architecture == "arm64":
        return devices_rules.arm64_settings(field, spec)
    if architecture in _SUPPORTED_ARCHITECTURES:
        # s390x's own settings checks are not reproduced.
        return []
    return [c.invalid(field.child("architecture"), f"unsupported architecture: {architecture}")]
