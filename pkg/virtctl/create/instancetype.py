"""``virtctl create instancetype`` and ``virtctl create preference``: print the manifests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import click

from kubevirt.virtctl.create.output import manifest_yaml
from kubevirt.virtctl.create.params import FlagError, flag_error, parse_params, random_suffix
from kubevirt_api.base import ApiModel
from kubevirt_api.core.v1.register import new_object
from kubevirt_api.instancetype.v1beta1 import (
    PreferredCPUTopology,
    VirtualMachineClusterInstancetype,
    VirtualMachineClusterPreference,
    VirtualMachineInstancetype,
    VirtualMachinePreference,
)
from kubevirt_api.resource import Quantity, QuantityError

__all__ = ["create_instancetype", "create_preference"]

_F = TypeVar("_F", bound=Callable[..., Any])

_TOPOLOGIES: Final = frozenset(
    value for key, value in vars(PreferredCPUTopology).items() if key.isupper() and isinstance(value, str)
)


def _devices(flag: str, values: tuple[str, ...]) -> list[dict[str, str]]:
    devices = []
    for value in values:
        params = parse_params(flag, value, ("name", "devicename"))
        if not params.get("name"):
            raise flag_error(flag, "name must be specified")
        if not params.get("devicename"):
            raise flag_error(flag, "deviceName must be specified")
        devices.append({"name": params["name"], "deviceName": params["devicename"]})
    return devices


def _naming_options(what: str, kind: str) -> Callable[[_F], _F]:
    """``--name``, ``-n/--namespace`` and ``--namespaced``, shared by both commands."""

    def decorate(command: _F) -> _F:
        for option in (
            click.option("--namespaced", is_flag=True, help=f"A {kind} instead of a cluster-wide one."),
            click.option(
                "-n", "--namespace", default="", help=f"Create a namespaced {what} in this namespace."
            ),
            click.option(
                "--name", default="", help=f"Name (default: [cluster]{what.replace(' ', '')}-<random>)."
            ),
        ):
            command = option(command)
        return command

    return decorate


def _print(
    prefix: str,
    models: tuple[type[ApiModel], type[ApiModel]],
    naming: tuple[str, str, bool],
    spec: dict[str, Any],
) -> None:
    """Prints the namespaced model when asked for (``--namespaced`` or a namespace), else the cluster one."""
    name, namespace, namespaced = naming
    namespaced = namespaced or bool(namespace)
    name = name or f"{prefix if namespaced else 'cluster' + prefix}-{random_suffix()}"
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    obj = new_object(models[0] if namespaced else models[1], metadata=metadata, spec=spec)  # type: ignore[type-var]
    click.echo(manifest_yaml(obj), nl=False)


@click.command(name="instancetype")
@_naming_options("instance type", "VirtualMachineInstancetype")
@click.option("--cpu", type=click.IntRange(min=0, max=2**32 - 1), required=True, help="Guest vCPUs.")
@click.option("--memory", required=True, help="Guest memory.")
@click.option("--gpu", multiple=True, help="name:<name>,devicename:<device>; repeatable.")
@click.option("--hostdevice", multiple=True, help="name:<name>,devicename:<device>; repeatable.")
@click.option("--iothreadspolicy", default="", help="auto or shared.")
def create_instancetype(
    name: str,
    namespace: str,
    cpu: int,
    memory: str,
    gpu: tuple[str, ...],
    hostdevice: tuple[str, ...],
    iothreadspolicy: str,
    namespaced: bool,
) -> None:
    """Create a VirtualMachineInstancetype or VirtualMachineClusterInstancetype manifest."""
    try:
        Quantity(memory)
    except QuantityError as err:
        raise FlagError(str(err)) from None
    if cpu <= 0:
        raise FlagError("cpu value must be greater than zero")
    spec: dict[str, Any] = {"cpu": {"guest": cpu}, "memory": {"guest": memory}}
    if gpu:
        spec["gpus"] = _devices("gpu", gpu)
    if hostdevice:
        spec["hostDevices"] = _devices("hostdevice", hostdevice)
    if iothreadspolicy:
        if iothreadspolicy not in ("auto", "shared"):
            raise flag_error("iothreadspolicy", "IOThread must be of value auto or shared")
        spec["ioThreadsPolicy"] = iothreadspolicy
    models = (VirtualMachineInstancetype, VirtualMachineClusterInstancetype)
    _print("instancetype", models, (name, namespace, namespaced), spec)


@click.command(name="preference")
@_naming_options("preference", "VirtualMachinePreference")
@click.option("--cpu-topology", default="", help="Preferred CPU topology: sockets, cores, threads or spread.")
@click.option("--machine-type", default="", help="Preferred machine type.")
@click.option("--volume-storage-class", default="", help="Preferred storage class of new volumes.")
def create_preference(
    name: str,
    namespace: str,
    cpu_topology: str,
    machine_type: str,
    volume_storage_class: str,
    namespaced: bool,
) -> None:
    """Create a VirtualMachinePreference or VirtualMachineClusterPreference manifest."""
    spec: dict[str, Any] = {}
    if volume_storage_class:
        spec["volumes"] = {"preferredStorageClassName": volume_storage_class}
    if machine_type:
        spec["machine"] = {"preferredMachineType": machine_type}
    if cpu_topology:
        if cpu_topology not in _TOPOLOGIES:
            message = "CPU topology must have a value of sockets, cores, threads or spread"
            raise flag_error("cpu-topology", message)
        spec["cpu"] = {"preferredCPUTopology": cpu_topology}
    models = (VirtualMachinePreference, VirtualMachineClusterPreference)
    _print("preference", models, (name, namespace, namespaced), spec)
