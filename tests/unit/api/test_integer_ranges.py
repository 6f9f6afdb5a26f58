"""Every integer field takes exactly the range of its Go type, in the models and in the CRD schemas."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from typing import Any

import pytest

import kubevirt_api
from kubevirt_api.base import ApiModel, ApiParseError
from kubevirt_api.cdi.crds import CDI_CRDS, cdi_custom_resource_definition
from kubevirt_api.crd import CRDS, custom_resource_definition

# The Go type of each integer field of the API (KubeVirt v1.6.6's staging/src/kubevirt.io/api, CDI
# v1.63's and k8s.io/api), by model name and JSON name; maps and slices by their element type.
GO_TYPES: dict[str, str] = {
    "CDIComponentConfig.apiServerReplicas": "int32",
    "CDIComponentConfig.deploymentReplicas": "int32",
    "CDIComponentConfig.uploadProxyReplicas": "int32",
    "CDIConfigSpec.dataVolumeTTLSeconds": "int32",
    "CDIConfigSpec.logVerbosity": "int32",
    "CPU.cores": "uint32",
    "CPU.maxSockets": "uint32",
    "CPU.sockets": "uint32",
    "CPU.threads": "uint32",
    "CPUInstancetype.guest": "uint32",
    "CPUInstancetype.maxSockets": "uint32",
    "CPUPreferenceRequirement.guest": "uint32",
    "CPUTopology.cores": "uint32",
    "CPUTopology.sockets": "uint32",
    "CPUTopology.threads": "uint32",
    "ClockOffsetUTC.offsetSeconds": "int",
    "ComponentConfig.replicas": "uint8",
    "ContainerDiskInfo.checksum": "uint32",
    "CustomBlockSize.logical": "uint",
    "CustomBlockSize.physical": "uint",
    "DHCPPrivateOptions.option": "int",
    "DataVolumeStatus.restartCount": "int32",
    "DeveloperConfiguration.cpuAllocationRatio": "int",
    "DeveloperConfiguration.memoryOvercommit": "int",
    "DeveloperConfiguration.minimumClusterTSCFrequency": "int64",
    "DeveloperConfiguration.minimumReservePVCBytes": "uint64",
    "DeveloperConfiguration.pvcTolerateLessSpaceUpToPercent": "int",
    "Disk.bootOrder": "uint",
    "DiskIOThreads.supplementalPoolThreadCount": "uint32",
    "DownwardAPIVolumeFile.mode": "int32",
    "FeatureSpinlocks.spinlocks": "uint32",
    "GenerationStatus.lastGeneration": "int64",
    "InitrdInfo.checksum": "uint32",
    "Interface.acpiIndex": "int",
    "Interface.bootOrder": "uint",
    "KernelInfo.checksum": "uint32",
    "KubeVirtConfiguration.memBalloonStatsPeriod": "uint32",
    "KubeVirtConfiguration.virtualMachineInstancesPerNode": "int",
    "KubeVirtStatus.observedGeneration": "int64",
    "KubeVirtStatus.outdatedVirtualMachineInstanceWorkloads": "int",
    "KubeVirtWorkloadUpdateStrategy.batchEvictionSize": "int",
    "ListMeta.remainingItemCount": "int64",
    "LiveUpdateConfiguration.maxCpuSockets": "uint32",
    "LiveUpdateConfiguration.maxHotplugRatio": "uint32",
    "LogVerbosity.nodeVerbosity": "map[string]uint",
    "LogVerbosity.virtAPI": "uint",
    "LogVerbosity.virtController": "uint",
    "LogVerbosity.virtHandler": "uint",
    "LogVerbosity.virtLauncher": "uint",
    "LogVerbosity.virtOperator": "uint",
    "LogVerbosity.virtSynchronizationController": "uint",
    "MemoryInstancetype.overcommitPercent": "int",
    "MigrationConfiguration.completionTimeoutPerGiB": "int64",
    "MigrationPolicySpec.completionTimeoutPerGiB": "int64",
    "MigrationConfiguration.parallelMigrationsPerCluster": "uint32",
    "MigrationConfiguration.parallelOutboundMigrationsPerNode": "uint32",
    "MigrationConfiguration.progressTimeout": "int64",
    "ObjectMeta.deletionGracePeriodSeconds": "int64",
    "ObjectMeta.generation": "int64",
    "Port.port": "int32",
    "PreferredSchedulingTerm.weight": "int32",
    "Probe.failureThreshold": "int32",
    "Probe.initialDelaySeconds": "int32",
    "Probe.periodSeconds": "int32",
    "Probe.successThreshold": "int32",
    "Probe.timeoutSeconds": "int32",
    "RestartOptions.gracePeriodSeconds": "int64",
    "SEVMeasurementInfo.apiMajor": "uint",
    "SEVMeasurementInfo.apiMinor": "uint",
    "SEVMeasurementInfo.buildID": "uint",
    "SEVMeasurementInfo.policy": "uint",
    "SpreadOptions.ratio": "uint32",
    "StopOptions.gracePeriod": "int64",
    "TokenBucketRateLimiter.burst": "int",
    "Toleration.tolerationSeconds": "int64",
    "TopologyHints.tscFrequency": "int64",
    "TopologySpreadConstraint.maxSkew": "int32",
    "TopologySpreadConstraint.minDomains": "int32",
    "VSOCKOptions.targetPort": "uint32",
    "VirtualMachineInstanceFileSystem.totalBytes": "int",
    "VirtualMachineInstanceFileSystem.usedBytes": "int",
    "VirtualMachineInstanceMigrationState.targetCPUSet": "[]int",
    "VirtualMachineInstanceMigrationState.targetDirectMigrationNodePorts": "map[string]int",
    "VirtualMachineInstanceMigrationTargetState.cpuSet": "[]int",
    "VirtualMachineInstanceMigrationTargetState.directMigrationNodePorts": "map[string]int",
    "VirtualMachineInstanceNetworkInterface.queueCount": "int32",
    "VirtualMachineInstanceReplicaSetSpec.replicas": "int32",
    "VirtualMachineInstanceReplicaSetStatus.readyReplicas": "int32",
    "VirtualMachineInstanceReplicaSetStatus.replicas": "int32",
    "VirtualMachineInstanceSpec.terminationGracePeriodSeconds": "int64",
    "VirtualMachineInstanceStatus.VSOCKCID": "uint32",
    "VirtualMachineInstanceStatus.runtimeUser": "uint64",
    "VirtualMachinePoolSpec.replicas": "int32",
    "VirtualMachinePoolStatus.readyReplicas": "int32",
    "VirtualMachinePoolStatus.replicas": "int32",
    "VirtualMachinePreferenceSpec.preferSpreadSocketToCoreRatio": "uint32",
    "VirtualMachinePreferenceSpec.preferredTerminationGracePeriodSeconds": "int64",
    "VirtualMachineStartFailure.consecutiveFailCount": "int",
    "VirtualMachineStatus.desiredGeneration": "int64",
    "VirtualMachineStatus.observedGeneration": "int64",
    "VolumeStatus.size": "int64",
    "WeightedPodAffinityTerm.weight": "int32",
}

RANGES = {
    "int": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint": (0, 2**64 - 1),
    "uint8": (0, 2**8 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}


def _models() -> dict[str, type[ApiModel]]:
    found: dict[str, type[ApiModel]] = {}
    for info in pkgutil.walk_packages(kubevirt_api.__path__, "kubevirt_api."):
        for value in vars(importlib.import_module(info.name)).values():
            if inspect.isclass(value) and issubclass(value, ApiModel) and value is not ApiModel:
                found[value.__name__] = value
    return found


MODELS = _models()


def _holds_int(annotation: Any) -> bool:
    return annotation is int or any(_holds_int(arg) for arg in typing.get_args(annotation))


def _is_int_or_string(annotation: Any) -> bool:
    members = {arg for arg in typing.get_args(annotation) if arg is not type(None)}
    return members == {int, str}


def integer_fields() -> list[str]:
    return sorted(
        f"{name}.{field.alias or attr}"
        for name, model in MODELS.items()
        for attr, field in model.model_fields.items()
        if _holds_int(field.annotation) and not _is_int_or_string(field.annotation)
    )


def test_every_integer_field_has_its_go_type_listed() -> None:
    assert integer_fields() == sorted(GO_TYPES)


def _sample(model: type[ApiModel], attr: str, key: str, value: int) -> dict[str, Any]:
    """A document setting only key (in the shape its type needs) to value."""
    annotation = model.model_fields[attr].annotation
    origins = {typing.get_origin(arg) for arg in (annotation, *typing.get_args(annotation))}
    wrapped: Any = [value] if list in origins else {"k": value} if dict in origins else value
    return {key: wrapped}


@pytest.mark.parametrize("field", sorted(GO_TYPES))
def test_the_model_takes_the_go_range_and_refuses_beyond_it(field: str) -> None:
    name, key = field.split(".")
    model = MODELS[name]
    attr = next(a for a, f in model.model_fields.items() if (f.alias or a) == key)
    low, high = RANGES[GO_TYPES[field].removeprefix("[]").removeprefix("map[string]")]
    for bad in (low - 1, high + 1):
        assert _faults(model, _sample(model, attr, key, bad), key), (field, bad)
    for good in (low, high):
        assert not _faults(model, _sample(model, attr, key, good), key), (field, good)


def _faults(model: type[ApiModel], document: dict[str, Any], key: str) -> list[str]:
    """The causes naming ``key`` (other required fields of the model may be missing)."""
    try:
        model.from_dict(document)
    except ApiParseError as err:
        return [str(c) for c in err.causes if c.path == key or c.path.startswith((f"{key}.", f"{key}["))]
    return []


def _integer_nodes(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "integer":
            found.append((path, schema))
        for key, value in schema.items():
            found += _integer_nodes(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _integer_nodes(value, f"{path}[{index}]")
    return found


# The API server reads schema bounds as float64; beyond 2**53 they are not kept exactly (2**63 - 1 even
# overflows to -2**63 and refuses everything), so 64-bit fields carry only the bounds it can hold and
# rely on its int64 decoding for the rest.
EXACT_IN_FLOAT64 = 2**53
# Kinds whose schema has no integer field at all.
KINDS_WITHOUT_INTEGERS = frozenset(
    {
        "VirtualMachineClone",
        "VirtualMachineExport",
        "VirtualMachineRestore",
        "VirtualMachineSnapshot",
        "DataSource",
        "StorageProfile",
    }
)


@pytest.mark.parametrize("kind", sorted(CRDS) + sorted(CDI_CRDS))
def test_every_integer_in_the_crd_schemas_has_the_range_the_api_server_can_hold(kind: str) -> None:
    document = custom_resource_definition(kind) if kind in CRDS else cdi_custom_resource_definition(kind)
    nodes = [node for version in document["spec"]["versions"] for node in _integer_nodes(version["schema"])]
    assert bool(nodes) == (kind not in KINDS_WITHOUT_INTEGERS)
    for path, node in nodes:
        bounds = [node[key] for key in ("minimum", "maximum") if key in node]
        assert all(abs(bound) <= EXACT_IN_FLOAT64 for bound in bounds), (path, node)
        if ".anyOf[" in path:
            continue  # the integer alternative of an int-or-string is bounded by its own rules
        if node.get("format") == "int64" or "format" not in node:
            assert node.get("minimum") in (None, 0), (path, node)  # 64 bits: only an unsigned minimum
        else:
            assert "minimum" in node, (path, node)
            assert "maximum" in node, (path, node)
