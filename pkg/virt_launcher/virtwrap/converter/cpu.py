"""Guest CPU: model and features, topology, vCPU count and hotpluggable vCPUs, dedicated pinning."""

from __future__ import annotations

from .. import api
from .conversion import MAX_VCPUS, Conversion
from .errors import ConversionError

HOST_MODEL = "host-model"
HOST_PASSTHROUGH = "host-passthrough"


def configure_cpu(c: Conversion) -> None:
    cpu_spec = c.vmi.spec.domain.cpu
    model = (cpu_spec.model if cpu_spec else None) or ""
    cpu = c.domain.cpu
    if model in ("", HOST_MODEL):
        cpu.mode = HOST_MODEL
    elif model == HOST_PASSTHROUGH:
        cpu.mode = HOST_PASSTHROUGH
    else:
        cpu.mode = "custom"
        cpu.model = model
    features = (cpu_spec.features if cpu_spec else None) or []
    cpu.features = [api.CPUFeature(name=f.name, policy=f.policy or None) for f in features]
    # MPX is gone from current hosts; named models still list it, so KubeVirt switches it off for
    # any CPU section whose model is not a host one (an empty model included, though it means host-model).
    if (
        cpu_spec is not None
        and model not in (HOST_MODEL, HOST_PASSTHROUGH)
        and c.context.architecture == "amd64"
        and not any(f.name == "mpx" for f in features)
    ):
        cpu.features.append(api.CPUFeature(name="mpx", policy="disable"))

    max_sockets = (cpu_spec.max_sockets if cpu_spec else None) or 0
    sockets = max_sockets or c.sockets
    total = sockets * c.cores * c.threads
    largest = max(c.sockets, max_sockets) * c.cores * c.threads
    if largest > MAX_VCPUS:
        raise ConversionError(
            "spec.domain.cpu",
            f"refusing to convert a topology of {largest} vCPUs (sockets={c.sockets} "
            f"maxSockets={max_sockets} cores={c.cores} threads={c.threads})",
        )
    cpu.topology = api.CPUTopology(sockets=sockets, cores=c.cores, threads=c.threads)
    c.domain.vcpu = api.VCPU(placement="static", cpus=total)
    if max_sockets:
        enabled = c.requested_vcpus
        first_socket = c.cores * c.threads
        c.domain.vcpus = api.VCPUs(
            vcpus=[
                api.VCPUsVCPU(
                    id=i,
                    enabled="yes" if i < enabled else "no",
                    hotpluggable="no" if i < first_socket else "yes",
                )
                for i in range(total)
            ]
        )


def configure_dedicated_cpus(c: Conversion) -> None:
    """Dedicated placement: each vCPU on its own host CPU from the pod's CPU set."""
    cpu_spec = c.vmi.spec.domain.cpu
    if cpu_spec is None or not cpu_spec.dedicated_cpu_placement:
        return
    cpu_set = c.context.cpu_set
    needed = c.requested_vcpus
    if len(cpu_set) < needed:
        missing_cores = -(-(needed - len(cpu_set)) // c.threads)
        raise ConversionError(
            "spec.domain.cpu.dedicatedCpuPlacement",
            f"not enough exclusive threads provided, could not fit {missing_cores} core(s)",
        )
    c.domain.cputune = api.CPUTune(
        vcpupin=[api.CPUTuneVCPUPin(vcpu=i, cpuset=str(cpu_set[i])) for i in range(needed)]
    )
    # tell the guest its vCPUs never wait for a host CPU
    features = c.domain.features = c.domain.features or api.Features()
    features.kvm = features.kvm or api.FeatureKVM()
    features.kvm.hint_dedicated = api.FeatureState(state="on")
