"""The virt-launcher pod for a VMI: a pure function of the defaulted VMI, the cluster's configuration, the
template parameters and the PVCs it names (KubeVirt's ``RenderLaunchManifest``).
"""

from __future__ import annotations

from kubevirt.virt_config import ClusterConfig, LauncherSettings
from kubevirt.virt_config.launcher import SeccompProfile
from kubevirt.virt_controller.services import containers, metadata, node_selectors, vmi_facts
from kubevirt.virt_controller.services.errors import TemplateError
from kubevirt.virt_controller.services.parameters import PvcLookup, TemplateParameters
from kubevirt.virt_controller.services.resources import compute_resources
from kubevirt.virt_controller.services.volumes import render_volumes
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.constants import (
    CUSTOM_LIBVIRT_LOG_FILTERS_ANNOTATION,
    KEEP_LAUNCHER_AFTER_FAILURE_ANNOTATION,
)
from kubevirt_api.view import JSON

GRACE_PERIOD_PADDING_SECONDS = 15
UNPAUSED_READINESS_GATE = "kubevirt.io/virtual-machine-unpaused"
FAIL_FAST_ANNOTATION = "kubevirt.io/func-test-virt-launcher-fail-fast"
LOG_VERBOSITY_LABEL = "logVerbosity"
DEBUG_LOGS_LABEL = "debugLogs"
VIRTIOFS_DEBUG_LOGS_LABEL = "virtiofsdDebugLogs"
IMAGE_VOLUME_GATE = "ImageVolume"
HYPERV_STRICT_CHECK_GATE = "HypervStrictCheck"
GPUS_WITH_DRA_GATE = "GPUsWithDRA"
HOST_DEVICES_WITH_DRA_GATE = "HostDevicesWithDRA"


def render_launcher_pod(
    vmi: VirtualMachineInstance,
    cluster: ClusterConfig,
    params: TemplateParameters,
    find_pvc: PvcLookup,
    *,
    backend_storage_pvc: str = "",
) -> JSON:
    """The pod (plain JSON, without kind, apiVersion or namespace) virt-controller creates for ``vmi``.

    ``vmi`` must be defaulted as virt-api's mutating webhook leaves it and carry its name, namespace and
    UID. ``backend_storage_pvc`` names the PVC holding persistent TPM/EFI state, when the VMI has any.
    Raises :class:`TemplateError` (a missing PVC, an unusable label) without side effects.
    """
    settings = cluster.launcher
    meta = vmi.metadata
    name = (meta.name if meta is not None else None) or ""
    namespace = (meta.namespace if meta is not None else None) or ""
    if not name or not namespace:
        raise TemplateError("metadata.name and metadata.namespace are required to render a launcher pod")
    if vmi_facts.needs_backend_storage(vmi) and not backend_storage_pvc:
        raise TemplateError(
            "can't generate manifest without backend-storage PVC, waiting for the PVC to be created"
        )

    non_root = vmi_facts.is_non_root(vmi)
    user = vmi_facts.NON_ROOT_UID if non_root else vmi_facts.ROOT_UID
    image_volumes = cluster.enabled(IMAGE_VOLUME_GATE)
    architecture = vmi.spec.architecture or cluster.default_architecture
    resources = compute_resources(
        vmi,
        settings,
        architecture=architecture,
        gpus_with_dra=cluster.enabled(GPUS_WITH_DRA_GATE),
        host_devices_with_dra=cluster.enabled(HOST_DEVICES_WITH_DRA_GATE),
    )
    layout = render_volumes(
        vmi, params, find_pvc, image_volumes=image_volumes, backend_storage_pvc=backend_storage_pvc
    )
    verbosity, env = _launcher_environment(vmi, settings)
    inputs = containers.ComputeInputs(
        command=_launcher_command(vmi, params, settings, cluster, non_root=non_root),
        env=env,
        image=params.launcher_image,
        pull_policy=settings.image_pull_policy,
        user=user,
        privileged=cluster.default_architecture == "ppc64le",
    )
    pod_containers = [containers.compute_container(vmi, inputs, layout, resources)]
    if not image_volumes:
        pod_containers += containers.container_disk_containers(vmi, init=False)
    pod_containers += containers.virtiofs_containers(vmi, params.launcher_image)

    init_containers: list[JSON] = []
    if containers.serial_console_logging(vmi, settings.serial_console_log_disabled):
        init_containers.append(
            containers.guest_console_log_container(
                vmi, params.launcher_image, settings.image_pull_policy, verbosity
            )
        )
    if not image_volumes and (vmi_facts.has_container_disk(vmi) or vmi_facts.kernel_boot_container(vmi)):
        init_containers.append(containers.container_disk_binary_container(vmi, inputs))
        init_containers += containers.container_disk_containers(vmi, init=True)

    hostname = vmi_facts.hostname(vmi)
    spec: JSON = {"volumes": layout.volumes}
    if init_containers:
        spec["initContainers"] = init_containers
    spec["containers"] = pod_containers
    spec["restartPolicy"] = "Never"
    spec["terminationGracePeriodSeconds"] = (
        vmi_facts.grace_period_seconds(vmi) + 2 * GRACE_PERIOD_PADDING_SECONDS
    )
    if vmi.spec.dns_policy:
        spec["dnsPolicy"] = vmi.spec.dns_policy
    spec["nodeSelector"] = _sorted(
        node_selectors.node_selector(
            vmi, settings.node_selectors, hyperv_strict=cluster.enabled(HYPERV_STRICT_CHECK_GATE)
        )
    )
    service_account = _service_account(vmi)
    if service_account:
        spec["serviceAccountName"] = service_account
    spec["automountServiceAccountToken"] = bool(service_account) or metadata.istio_proxy_injected(vmi)
    spec["securityContext"] = _pod_security_context(non_root, settings.seccomp_profile)
    pull_secrets = _image_pull_secrets(vmi, params)
    if pull_secrets:
        spec["imagePullSecrets"] = pull_secrets
    spec["hostname"] = hostname
    if vmi.spec.subdomain:
        spec["subdomain"] = vmi.spec.subdomain
    pod_affinity = node_selectors.affinity(vmi)
    if pod_affinity is not None:
        spec["affinity"] = pod_affinity
    if vmi.spec.scheduler_name:
        spec["schedulerName"] = vmi.spec.scheduler_name
    if vmi.spec.tolerations:
        spec["tolerations"] = [toleration.to_dict() for toleration in vmi.spec.tolerations]
    if vmi.spec.priority_class_name:
        spec["priorityClassName"] = vmi.spec.priority_class_name
    if vmi.spec.dns_config is not None:
        spec["dnsConfig"] = vmi.spec.dns_config.to_dict()
    spec["readinessGates"] = [{"conditionType": UNPAUSED_READINESS_GATE}]
    if settings.default_runtime_class:
        spec["runtimeClassName"] = settings.default_runtime_class
    spec["enableServiceLinks"] = False
    if vmi.spec.topology_spread_constraints:
        spec["topologySpreadConstraints"] = [c.to_dict() for c in vmi.spec.topology_spread_constraints]
    if vmi.spec.resource_claims:
        spec["resourceClaims"] = [claim.to_dict() for claim in vmi.spec.resource_claims]

    return {
        "metadata": {
            "generateName": f"virt-launcher-{name}-",
            "labels": _sorted(metadata.pod_labels(vmi, hostname)),
            "annotations": _sorted(metadata.pod_annotations(vmi)),
            "ownerReferences": [metadata.owner_reference(vmi)],
        },
        "spec": spec,
    }


def _launcher_command(
    vmi: VirtualMachineInstance,
    params: TemplateParameters,
    settings: LauncherSettings,
    cluster: ClusterConfig,
    *,
    non_root: bool,
) -> list[str]:
    meta = vmi.metadata
    assert meta is not None
    timeout = params.launcher_qemu_timeout_seconds + params.qemu_timeout_jitter_seconds
    command = [
        "/usr/bin/virt-launcher-monitor",
        "--qemu-timeout", f"{timeout}s",
        "--name", meta.name or "",
        "--uid", meta.uid or "",
        "--namespace", meta.namespace or "",
        "--kubevirt-share-dir", params.virt_share_dir,
        "--ephemeral-disk-dir", params.ephemeral_disk_dir,
        "--container-disk-dir", params.container_disk_dir,
        "--grace-period-seconds", str(vmi_facts.grace_period_seconds(vmi) + GRACE_PERIOD_PADDING_SECONDS),
        "--hook-sidecars", "0",
        "--ovmf-path", settings.ovmf_path_for(vmi.spec.architecture or ""),
        "--disk-memory-limit", str(settings.disk_verification_memory_limit_bytes),
    ]  # fmt: skip
    if non_root:
        command.append("--run-as-nonroot")
    if cluster.enabled(IMAGE_VOLUME_GATE):
        command.append("--image-volume")
    annotations = vmi_facts.vmi_annotations(vmi)
    if CUSTOM_LIBVIRT_LOG_FILTERS_ANNOTATION in annotations:
        command += ["--libvirt-log-filters", annotations[CUSTOM_LIBVIRT_LOG_FILTERS_ANNOTATION]]
    if settings.use_emulation:
        command.append("--allow-emulation")
    if any(
        key.startswith(KEEP_LAUNCHER_AFTER_FAILURE_ANNOTATION) and (value == "" or value.startswith("true"))
        for key, value in annotations.items()
    ):
        command.append("--keep-after-failure")
    if FAIL_FAST_ANNOTATION in annotations:
        command.append("--simulate-crash")
    return command


def _launcher_environment(vmi: VirtualMachineInstance, settings: LauncherSettings) -> tuple[int, list[JSON]]:
    """The log verbosity in effect (a VMI label overrides the cluster's) and the launcher's extra env."""
    labels = vmi_facts.vmi_labels(vmi)
    verbosity = settings.launcher_log_verbosity
    env: list[JSON] = []
    label = labels.get(LOG_VERBOSITY_LABEL)
    if label is not None:
        try:
            verbosity = int(label)
        except ValueError:
            raise TemplateError(
                f"metadata.labels.{LOG_VERBOSITY_LABEL}: verbosity {label} cannot cast to int"
            ) from None
        if verbosity < 0:
            raise TemplateError(f"metadata.labels.{LOG_VERBOSITY_LABEL}: verbosity {label} is negative")
    if label is not None or verbosity != 2:
        env.append(
            {"name": "VIRT_LAUNCHER_LOG_VERBOSITY", "value": label if label is not None else str(verbosity)}
        )
    extensive = verbosity > containers.EXTENSIVE_LOG_VERBOSITY
    if labels.get(DEBUG_LOGS_LABEL, "").lower() == "true" or extensive:
        env.append({"name": "LIBVIRT_DEBUG_LOGS", "value": "1"})
    if labels.get(VIRTIOFS_DEBUG_LOGS_LABEL, "").lower() == "true" or extensive:
        env.append({"name": "VIRTIOFSD_DEBUG_LOGS", "value": "1"})
    env.append({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    return verbosity, env


def _pod_security_context(non_root: bool, seccomp: SeccompProfile | None) -> JSON:
    if non_root:
        user = vmi_facts.NON_ROOT_UID
        context: JSON = {"runAsUser": user, "runAsGroup": user, "runAsNonRoot": True, "fsGroup": user}
    else:
        context = {"runAsUser": vmi_facts.ROOT_UID, "fsGroup": vmi_facts.NON_ROOT_UID}
    if seccomp is not None:
        context["seccompProfile"] = seccomp.to_dict()
    return context


def _service_account(vmi: VirtualMachineInstance) -> str:
    for volume in vmi.spec.volumes or []:
        if volume.service_account is not None:
            return volume.service_account.service_account_name or ""
    return ""


def _image_pull_secrets(vmi: VirtualMachineInstance, params: TemplateParameters) -> list[JSON]:
    names: list[str] = [
        volume.container_disk.image_pull_secret
        for volume in vmi.spec.volumes or []
        if volume.container_disk is not None and volume.container_disk.image_pull_secret
    ]
    kernel_boot = vmi_facts.kernel_boot_container(vmi)
    if kernel_boot is not None and kernel_boot.image_pull_secret:
        names.append(kernel_boot.image_pull_secret)
    if params.image_pull_secret:
        names.append(params.image_pull_secret)
    return [{"name": secret} for secret in dict.fromkeys(names)]


def _sorted(mapping: dict[str, str]) -> dict[str, str]:
    """Keys in order, as Go writes a map."""
    return dict(sorted(mapping.items()))
