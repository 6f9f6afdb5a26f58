"""``virtctl create clone``: prints a VirtualMachineClone manifest; talks to no cluster.

The source is a VirtualMachine or a VirtualMachineSnapshot, the target a VirtualMachine (its name may be
empty: the clone controller then picks one). ``-n/--namespace`` sets the clone's namespace only when given.
"""

from __future__ import annotations

from typing import Any, Final

import click

from kubevirt.virtctl.clientconfig import client_flags, flags_from
from kubevirt.virtctl.create.output import manifest_yaml
from kubevirt.virtctl.create.params import FlagError, random_suffix
from kubevirt_api.base import ApiParseError
from kubevirt_api.clone.v1beta1 import VirtualMachineClone
from kubevirt_api.core.v1.register import gvk_of

__all__ = ["create_clone"]

SUPPORTED_SOURCE_TYPES: Final = "vm, vmsnapshot"
SUPPORTED_TARGET_TYPES: Final = "vm"
_DEFAULT_TYPE: Final = "vm"
# Every spelling virtctl accepts for --source-type / --target-type, with the reference it stands for.
_VM_REFERENCE: Final = ("VirtualMachine", "kubevirt.io")
_SNAPSHOT_REFERENCE: Final = ("VirtualMachineSnapshot", "snapshot.kubevirt.io")
_TYPES: Final = {
    **dict.fromkeys(("vm", "VM", "VirtualMachine", "virtualmachine"), _VM_REFERENCE),
    **dict.fromkeys(("snapshot", "VirtualMachineSnapshot", "vmsnapshot", "VMSnapshot"), _SNAPSHOT_REFERENCE),
}
_MULTIPLE: Final = "Can be provided multiple times."

_EXAMPLES: Final = (
    (
        "Create a manifest for a clone with a random name:",
        "create clone --source-name sourceVM --target-name targetVM",
    ),
    (
        "Create a manifest for a clone with a specified name:",
        "create clone --name my-clone --source-name sourceVM --target-name targetVM",
    ),
    (
        "Create a manifest for a clone with a randomized target name (target name is omitted):",
        "create clone --source-name sourceVM",
    ),
    (
        "Create a manifest for a clone with specified source / target types. The default type is VM.",
        "create clone --source-name sourceVM --source-type vm --target-name targetVM --target-type vm",
    ),
    (
        "Supported source types are vm (aliases: VM, VirtualMachine, virtualmachine) and snapshot (aliases:"
        " vmsnapshot, VirtualMachineSnapshot, VMSnapshot). The only supported target type is vm.",
        "",
    ),
    (
        "Create a manifest for a clone with a source type snapshot to a target type VM:",
        "create clone --source-name mySnapshot --source-type snapshot --target-name targetVM",
    ),
    (
        "Create a manifest for a clone with label filters:",
        "create clone --source-name sourceVM --label-filter '*' --label-filter '!some/key'",
    ),
    (
        "Create a manifest for a clone with annotation filters:",
        "create clone --source-name sourceVM --annotation-filter '*' --annotation-filter '!some/key'",
    ),
    (
        "Create a manifest for a clone with template label filters:",
        "create clone --source-name sourceVM --template-label-filter '*' --template-label-filter '!some/key'",
    ),
    (
        "Create a manifest for a clone with template annotation filters:",
        "create clone --source-name sourceVM --template-annotation-filter '*'"
        " --template-annotation-filter '!some/key'",
    ),
    (
        "Create a manifest for a clone with new MAC addresses:",
        "create clone --source-name sourceVM --new-mac-address interface1:00-11-22"
        " --new-mac-address interface2:00-11-33",
    ),
    (
        "Create a manifest for a clone with new SMBIOS serial:",
        'create clone --source-name sourceVM --new-smbios-serial "new-serial"',
    ),
    (
        "Create a manifest for a clone and use it to create a resource with kubectl",
        "create clone --source-name sourceVM | kubectl create -f -",
    ),
)


def _epilog() -> str:
    # "\b" keeps click from re-wrapping each example paragraph.
    paragraphs = [
        "\b\n  # " + comment + (f"\n  virtctl {command}" if command else "") for comment, command in _EXAMPLES
    ]
    return "Examples:\n\n" + "\n\n".join(paragraphs)


def _reference(type_name: str, name: str, *, is_source: bool) -> dict[str, Any]:
    """The typed reference for ``--source-type``/``--target-type``; a snapshot is never a target."""
    reference = _TYPES.get(type_name)
    if reference is None or (reference is _SNAPSHOT_REFERENCE and not is_source):
        role, supported = (
            ("source", SUPPORTED_SOURCE_TYPES) if is_source else ("target", SUPPORTED_TARGET_TYPES)
        )
        raise FlagError(f"{role} type {type_name} is not supported. Supported types: {supported}")
    kind, api_group = reference
    return {"apiGroup": api_group, "kind": kind, "name": name}


def _new_mac_addresses(values: tuple[str, ...]) -> dict[str, str]:
    """``interface:address`` pairs; the last one given for an interface wins."""
    addresses: dict[str, str] = {}
    for param in values:
        parts = param.split(":")
        if len(parts) != 2:
            raise FlagError(
                f"newMacAddress parameter {param} is invalid: exactly one ':' is expected."
                " For example: 'interface0:address0'"
            )
        interface, address = parts
        if not interface:
            raise FlagError(f"newMacAddress parameter {param} has empty interface name")
        if not address:
            raise FlagError(f"newMacAddress parameter {param} has empty address name")
        addresses[interface] = address
    return addresses


def _spec(flags: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "source": _reference(flags["source_type"] or _DEFAULT_TYPE, flags["source_name"], is_source=True),
        "target": _reference(flags["target_type"] or _DEFAULT_TYPE, flags["target_name"], is_source=False),
        "annotationFilters": list(flags["annotation_filter"]),
        "labelFilters": list(flags["label_filter"]),
        "template": {
            "annotationFilters": list(flags["template_annotation_filter"]),
            "labelFilters": list(flags["template_label_filter"]),
        },
    }
    if flags["new_smbios_serial"]:
        spec["newSMBiosSerial"] = flags["new_smbios_serial"]
    addresses = _new_mac_addresses(flags["new_mac_address"])
    if addresses:
        spec["newMacAddresses"] = addresses
    return spec


@click.command(name="clone", short_help="Create a clone object manifest", epilog=_epilog())
@click.option(
    "--name", default="", help="Specify the name of the clone. If not specified, name would be randomized."
)
@click.option("--source-name", default=None, help="Specify the clone's source name.  [required]")
@click.option("--target-name", default="", help="Specify the clone's target name.")
@click.option(
    "--source-type",
    default="",
    help=f"Specify the clone's source type. Default type is VM. Supported types: {SUPPORTED_SOURCE_TYPES}",
)
@click.option(
    "--target-type",
    default="",
    help=f"Specify the clone's target type. Default type is VM. Supported types: {SUPPORTED_TARGET_TYPES}",
)
@click.option("--label-filter", multiple=True, help=f"Specify clone's label filters. {_MULTIPLE}")
@click.option("--annotation-filter", multiple=True, help=f"Specify clone's annotation filters. {_MULTIPLE}")
@click.option(
    "--template-label-filter", multiple=True, help=f"Specify clone's template label filters. {_MULTIPLE}"
)
@click.option(
    "--template-annotation-filter",
    multiple=True,
    help=f"Specify clone's template annotation filters. {_MULTIPLE}",
)
@click.option(
    "--new-mac-address",
    multiple=True,
    help="Specify clone's new mac addresses. For example: 'interfaceName0:newAddress0'",
)
@click.option("--new-smbios-serial", default="", help="Specify the clone's new smbios serial")
@client_flags
@click.pass_context
def create_clone(
    ctx: click.Context,
    /,
    kubeconfig: str | None,
    kube_context: str | None,
    namespace: str | None,
    **flags: Any,
) -> None:
    """Create a clone object manifest."""
    # Cobra's required-flag check: an explicitly empty --source-name passes it and fails below.
    if flags["source_name"] is None:
        raise FlagError('required flag(s) "source-name" not set')
    namespace = flags_from(ctx, kubeconfig, kube_context, namespace).namespace
    name = flags["name"] or f"clone-{random_suffix()}"
    if not flags["source_name"]:
        raise FlagError("source name must not be empty")
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    body = {
        "apiVersion": gvk_of(VirtualMachineClone).api_version,
        "kind": "VirtualMachineClone",
        "metadata": metadata,
        "spec": _spec(flags),
    }
    try:
        clone = VirtualMachineClone.from_dict(body)
    except ApiParseError as err:
        raise click.ClickException(str(err)) from None
    click.echo(manifest_yaml(clone), nl=False)
