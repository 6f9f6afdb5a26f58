"""``virtctl create vm``: prints a VirtualMachine manifest; talks to no cluster.

Supported: the name, run strategy, grace period and memory, ``--instancetype`` / ``--preference``
(``[kind/]name``), their inference from a volume, container disk, PVC, imported (DataVolume template)
and sysprep volumes, access credentials and the cloud-init disk (see :mod:`.cloudinit`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import click
from click.core import ParameterSource

from kubevirt.admission.k8s_names import dns1123_label
from kubevirt.instancetype.matcher import DEFAULT_INSTANCETYPE_KIND, DEFAULT_PREFERENCE_KIND
from kubevirt.virtctl.create.cloudinit import CloudInitFlags, access_credentials, cloud_init_volume
from kubevirt.virtctl.create.imports import FLAG as IMPORT_FLAG
from kubevirt.virtctl.create.imports import imported_volume
from kubevirt.virtctl.create.output import manifest_yaml
from kubevirt.virtctl.create.params import (
    FlagError,
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
_CLOUD_INIT_DATA: Final = ("cloud-init-user-data", "cloud-init-network-data")
_DEPRECATED_IMPORTS: Final = (
    ("volume-datasource", "ds"),
    ("volume-clone-pvc", "pvc"),
    ("volume-blank", "blank"),
)
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
    data_volume_templates: list[dict[str, Any]] = field(default_factory=list)

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
    if "dataVolume" in volume:
        _check_data_volume_inferable(draft, volume["dataVolume"]["name"])
    elif "persistentVolumeClaim" not in volume:
        raise _InferenceError(_NOT_INFERABLE)
    return wanted


def _check_data_volume_inferable(draft: _Draft, name: str) -> None:
    """A DataVolume from this command must clone or import something that can carry the labels."""
    template = next((t for t in draft.data_volume_templates if t["metadata"]["name"] == name), None)
    if template is None:
        return
    spec = template["spec"]
    source = spec.get("source") or {}
    if any(key in source for key in ("pvc", "registry", "snapshot")):
        return
    if (spec.get("sourceRef") or {}).get("kind") == "DataSource":
        return
    raise _InferenceError(
        "this datavolume is not valid to infer an instancetype or preference from "
        "(source needs to be PVC, Registry or Snapshot, sourceRef needs to be DataSource)"
    )


def _imports(draft: _Draft, values: list[str]) -> None:
    for value in values:
        imported = imported_volume(value)
        name = imported.name or f"imported-volume-{random_suffix()}"
        storage: dict[str, Any] = {}
        if imported.size is not None:
            storage["resources"] = {"requests": {"storage": imported.size}}
        volume = {"name": name, "dataVolume": {"name": name}}
        draft.add_volume(IMPORT_FLAG, volume, imported.boot_order)
        template = {"metadata": {"name": name}, "spec": {**imported.spec, "storage": storage}}
        draft.data_volume_templates.append(template)


def _import_values(ctx: click.Context, flags: dict[str, Any]) -> list[str]:
    """--volume-import plus the deprecated flags KubeVirt turns into it, each value put in front (as
    KubeVirt does, so later flags and later values come first)."""
    values = list(flags["volume_import"])
    for flag, source_type in _DEPRECATED_IMPORTS:
        given = flags[flag.replace("-", "_")]
        if not given:
            continue
        click.echo(f"Flag --{flag} has been deprecated, use flag --volume-import instead", err=True)
        for value in given:
            if not value:
                raise flag_error(IMPORT_FLAG, "params may not be empty")
            values.insert(0, f"type:{source_type},{value}")
    return values


def _sysprep(draft: _Draft, value: str) -> None:
    flag = "volume-sysprep"
    params = parse_params(flag, value, ("src", "type"))
    if not params.get("src"):
        raise flag_error(flag, "src must be specified")
    try:
        namespace, name = split_prefixed_name(flag, params["src"])
    except FlagError as err:
        raise flag_error(flag, f"src invalid: {err.message.split(': ', 1)[-1]}") from None
    if namespace:
        raise flag_error(flag, f'not allowed to specify namespace of configmap or secret "{name}"')
    source_type = params.get("type") or "configmap"
    if draft.volume("sysprepdisk") is not None:
        raise flag_error(flag, 'there is already a volume with name "sysprepdisk"')
    key = {"configmap": "configMap", "secret": "secret"}.get(source_type.lower())
    if key is None:
        raise flag_error(
            flag, f'invalid sysprep source type "{source_type}", supported values are: configmap, secret'
        )
    draft.volumes.append({"name": "sysprepdisk", "sysprep": {key: {"name": params["src"]}}})


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


def _bool_option(name: str, help_text: str, *, default: bool = True) -> Callable[[_F], _F]:
    # Like cobra's bool flags: "--flag" alone means true, "--flag=false" turns it off.
    return click.option(
        name, type=click.BOOL, default=default, is_flag=False, flag_value=True, help=help_text
    )


def _cloud_init_flags(ctx: click.Context, flags: dict[str, Any]) -> CloudInitFlags:
    names = ("user", "password-file", "ssh-key", "ga-manage-ssh", "cloud-init", *_CLOUD_INIT_DATA)
    return CloudInitFlags(
        user=flags["user"],
        password_file=flags["password_file"],
        # A string slice flag: every value may list several keys, comma-separated.
        ssh_keys=[key for value in flags["ssh_key"] for key in value.split(",") if key],
        ga_manage_ssh=flags["ga_manage_ssh"],
        cloud_init=flags["cloud_init"],
        user_data=flags["cloud_init_user_data"],
        network_data=flags["cloud_init_network_data"],
        changed={name for name in names if _changed(ctx, name.replace("-", "_"))},
    )


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
@click.option(
    "--volume-import",
    multiple=True,
    help=(
        "type:<blank|gcs|http|imageio|pvc|registry|s3|vddk|snapshot|ds>,<its params>"
        "[,size:<quantity>][,name:<name>][,bootorder:<n>]"
    ),
)
@click.option("--volume-datasource", multiple=True, help="Deprecated: --volume-import type:ds,...")
@click.option("--volume-clone-pvc", multiple=True, help="Deprecated: --volume-import type:pvc,...")
@click.option("--volume-blank", multiple=True, help="Deprecated: --volume-import type:blank,...")
@click.option("--volume-sysprep", default=None, help="src:<configmap or secret>[,type:configmap|secret]")
@click.option("--user", default="", help="The user in the cloud-init user data.")
@click.option("--password-file", default="", help="A file holding the user's password (stored in cleartext).")
@click.option("--ssh-key", multiple=True, help="SSH authorized keys for the cloud-init user data.")
@_bool_option("--ga-manage-ssh", "Let the guest agent manage SSH keys (SELinux boolean).", default=False)
@click.option(
    "--access-cred",
    multiple=True,
    help="type:ssh|password,src:<secret>[,method:ga|nocloud|configdrive][,user:<u>]",
)
@click.option(
    "--cloud-init", default="nocloud", help="The cloud-init data source: nocloud, configdrive or none."
)
@click.option("--cloud-init-user-data", default="", help="Base64 encoded cloud-init user data.")
@click.option("--cloud-init-network-data", default="", help="Base64 encoded cloud-init network data.")
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
    _imports(draft, _import_values(ctx, flags))
    if flags["volume_sysprep"] is not None:
        _sysprep(draft, flags["volume_sysprep"])
    cloud_init = _cloud_init_flags(ctx, flags)
    credentials = access_credentials(flags["access_cred"], cloud_init)
    if credentials:
        spec["template"]["spec"]["accessCredentials"] = credentials
    cloud_init_disk = cloud_init_volume(cloud_init, [volume["name"] for volume in draft.volumes])
    if cloud_init_disk is not None:
        draft.volumes.append(cloud_init_disk)
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
    if draft.data_volume_templates:
        spec["dataVolumeTemplates"] = draft.data_volume_templates
    metadata = {"name": name, **({"namespace": flags["namespace"]} if flags["namespace"] else {})}
    body = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": metadata, "spec": spec}
    try:
        vm = VirtualMachine.from_dict(body)
    except ApiParseError as err:
        raise click.ClickException(str(err)) from None
    click.echo(manifest_yaml(vm), nl=False)
