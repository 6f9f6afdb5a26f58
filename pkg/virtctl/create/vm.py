"""``virtctl create vm``: prints a VirtualMachine manifest; talks to no cluster.

Supported: the name, run strategy, grace period and memory, ``--instancetype`` / ``--preference``
(``[kind/]name``), their inference from a volume, and container disk and PVC volumes. The DataVolume,
sysprep, cloud-init and access credential flags of KubeVirt's command are not offered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import click
from click.core import ParameterSource

from kubevirt.admission.k8s_names import dns1123_label
from kubevirt.instancetype.matcher import DEFAULT_INSTANCETYPE_KIND, DEFAULT_PREFERENCE_KIND
from kubevirt.virtctl.create.output import manifest_yaml
from kubevirt.virtctl.create.params import (
    boot_order,
    flag_error,
    parse_params,
    random_suffix,
    split_prefixed_name,
)
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1.vm import InferFromVolumeFailurePolicy, VirtualMachine
from kubevirt_api.resource import Quantity, QuantityError

__all__ = ["create_vm"]

_F = TypeVar("_F", bound=Callable[..., Any])

RUN_STRATEGIES: Final = ("Always", "Manual", "Halted", "Once", "RerunOnFailure")
_INSTANCETYPE_KINDS: Final = ("virtualmachineinstancetype", DEFAULT_INSTANCETYPE_KIND)
_PREFERENCE_KINDS: Final = ("virtualmachinepreference", DEFAULT_PREFERENCE_KIND)
_VOLUME_PARAMS: Final = ("src", "name", "bootorder")
_NOT_INFERABLE: Final = (
    "inference of instancetype or preference works only with datasources, datavolumes or pvcs"
)


class _InferenceError(Exception):
    """The volume to infer from is missing or unsuitable; fatal only when inference was asked for."""


@dataclass
class _Draft:
    name: str
    volumes: list[dict[str, Any]] = field(default_factory=list)
    disks: list[dict[str, Any]] = field(default_factory=list)
    boot_orders: dict[int, str] = field(default_factory=dict)

    def volume(self, name: str) -> dict[str, Any] | None:
        return next((v for v in self.volumes if v["name"] == name), None)

    def add_volume(self, flag: str, volume: dict[str, Any], order: int | None) -> None:
        name = volume["name"]
        errors = dns1123_label(name)
        if errors:
            raise flag_error(flag, f'invalid name "{name}": {",".join(errors)}')
        if self.volume(name) is not None:
            raise flag_error(flag, f'there is already a volume with name "{name}"')
        self.volumes.append(volume)
        if order is None:
            return
        if order == 0:
            raise flag_error(flag, "bootorder must be greater than 0")
        if order in self.boot_orders:
            raise flag_error(flag, f"bootorder {order} was specified multiple times")
        self.disks.append({"name": name, "bootOrder": order})
        self.boot_orders[order] = name


def _matcher(flag: str, value: str, kinds: tuple[str, str], what: str) -> dict[str, str]:
    kind, name = split_prefixed_name(flag, value)
    kind = kind.lower()
    if kind and kind not in kinds:
        raise flag_error(flag, f'invalid {what} kind "{kind}", supported values are: {kinds[0]}, {kinds[1]}')
    return {"name": name, "kind": kind} if kind else {"name": name}


def _run_strategy(value: str) -> str:
    for strategy in RUN_STRATEGIES:
        if strategy.lower() == value.lower():
            return strategy
    supported = ", ".join(RUN_STRATEGIES)
    raise flag_error("run-strategy", f'invalid run strategy "{value}", supported values are: {supported}')


def _containerdisks(draft: _Draft, values: tuple[str, ...]) -> None:
    flag = "volume-containerdisk"
    for index, value in enumerate(values):
        params = parse_params(flag, value, _VOLUME_PARAMS)
        if not params.get("src"):
            raise flag_error(flag, "src must be specified")
        name = params.get("name") or f"{draft.name}-containerdisk-{index}"
        draft.add_volume(
            flag, {"name": name, "containerDisk": {"image": params["src"]}}, boot_order(flag, params)
        )


def _pvcs(draft: _Draft, values: tuple[str, ...]) -> None:
    flag = "volume-pvc"
    for value in values:
        params = parse_params(flag, value, _VOLUME_PARAMS)
        if not params.get("src"):
            raise flag_error(flag, "src must be specified")
        namespace, claim = split_prefixed_name(flag, params["src"])
        if namespace:
            raise flag_error(flag, f'not allowed to specify namespace of pvc "{claim}"')
        name = params.get("name") or claim
        volume = {"name": name, "persistentVolumeClaim": {"claimName": claim}}
        draft.add_volume(flag, volume, boot_order(flag, params))


def _inference_volume(draft: _Draft, wanted: str) -> str:
    if not wanted:
        if not draft.volumes:
            raise _InferenceError("at least one volume is needed to infer an instance type or preference")
        wanted = draft.boot_orders[min(draft.boot_orders)] if draft.boot_orders else draft.volumes[0]["name"]
    volume = draft.volume(wanted)
    if volume is None:
        raise _InferenceError(f'there is no volume with name "{wanted}"')
    if "persistentVolumeClaim" not in volume:
        raise _InferenceError(_NOT_INFERABLE)
    return wanted


def _changed(ctx: click.Context, *names: str) -> bool:
    return any(ctx.get_parameter_source(name) is not ParameterSource.DEFAULT for name in names)


def _infer(draft: _Draft, spec: dict[str, Any], explicit: bool, key: str, wanted: str) -> None:
    try:
        volume = _inference_volume(draft, wanted)
    except _InferenceError as err:
        if explicit:
            raise click.ClickException(str(err)) from None
        return
    spec[key] = {"inferFromVolume": volume}
    if not explicit:
        spec[key]["inferFromVolumeFailurePolicy"] = (
            InferFromVolumeFailurePolicy.IGNORE_INFER_FROM_VOLUME_FAILURE
        )
    elif key == "instancetype":
        spec["template"]["spec"]["domain"].pop("memory", None)


def _bool_option(name: str, help_text: str) -> Callable[[_F], _F]:
    # Like cobra's bool flags: "--flag" alone means true, "--flag=false" turns it off.
    return click.option(name, type=click.BOOL, default=True, is_flag=False, flag_value=True, help=help_text)


@click.command(name="vm")
@click.option("--name", default="", help="Name of the VM (default: vm-<random>).")
@click.option("-n", "--namespace", default="", help="Namespace of the VM.")
@click.option("--run-strategy", default="Always", show_default=True, help="The VM's run strategy.")
@click.option("--termination-grace-period", type=int, default=180, show_default=True, help="Seconds.")
@click.option("--memory", default="512Mi", show_default=True, help="Guest memory, without an instance type.")
@click.option("--instancetype", default="", help="[kind/]name of a (cluster) instance type.")
@_bool_option("--infer-instancetype", "Infer the instance type from the boot volume.")
@click.option("--infer-instancetype-from", default="", help="Volume to infer the instance type from.")
@click.option("--preference", default="", help="[kind/]name of a (cluster) preference.")
@_bool_option("--infer-preference", "Infer the preference from the boot volume.")
@click.option("--infer-preference-from", default="", help="Volume to infer the preference from.")
@click.option("--volume-containerdisk", multiple=True, help="src:<image>[,name:<name>][,bootorder:<n>]")
@click.option("--volume-pvc", multiple=True, help="src:<pvc>[,name:<name>][,bootorder:<n>]")
@click.pass_context
def create_vm(ctx: click.Context, /, **flags: Any) -> None:
    """Create a VirtualMachine manifest."""
    name = flags["name"] or f"vm-{random_suffix()}"
    try:
        memory = str(Quantity(flags["memory"]))
    except QuantityError as err:
        raise flag_error("memory", str(err)) from None
    spec: dict[str, Any] = {
        "runStrategy": _run_strategy(flags["run_strategy"]),
        "template": {
            "spec": {
                "terminationGracePeriodSeconds": flags["termination_grace_period"],
                "domain": {"memory": {"guest": memory}},
            }
        },
    }
    if flags["instancetype"]:
        spec["instancetype"] = _matcher(
            "instancetype", flags["instancetype"], _INSTANCETYPE_KINDS, "instancetype"
        )
        spec["template"]["spec"]["domain"].pop("memory")
    if flags["preference"]:
        spec["preference"] = _matcher("preference", flags["preference"], _PREFERENCE_KINDS, "preference")
    draft = _Draft(name)
    _containerdisks(draft, flags["volume_containerdisk"])
    _pvcs(draft, flags["volume_pvc"])
    if flags["infer_instancetype"] and not flags["instancetype"] and not _changed(ctx, "memory"):
        explicit = _changed(ctx, "infer_instancetype", "infer_instancetype_from")
        _infer(draft, spec, explicit, "instancetype", flags["infer_instancetype_from"])
    if flags["infer_preference"] and not flags["preference"]:
        explicit = _changed(ctx, "infer_preference", "infer_preference_from")
        _infer(draft, spec, explicit, "preference", flags["infer_preference_from"])
    domain = spec["template"]["spec"]["domain"]
    domain["devices"] = {"disks": draft.disks} if draft.disks else {}
    if draft.volumes:
        spec["template"]["spec"]["volumes"] = draft.volumes
    metadata = {"name": name, **({"namespace": flags["namespace"]} if flags["namespace"] else {})}
    body = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": metadata, "spec": spec}
    try:
        vm = VirtualMachine.from_dict(body)
    except ApiParseError as err:
        raise click.ClickException(str(err)) from None
    click.echo(manifest_yaml(vm), nl=False)
