"""``virtctl expand``: a VM with its instance type and preference expanded, by virt-api.

``--vm NAME`` asks for a stored VM (GET ``expand-spec``), ``--file F`` (``-``: stdin) sends a VM
manifest (PUT ``expand-vm-spec``). The answer is printed as YAML (default) or JSON, as KubeVirt's
virtctl prints it; failures go to stderr with exit code 1.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click
import yaml

from kubevirt.client import ApiError
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.create.output import manifest_yaml
from kubevirt.virtctl.lifecycle import SUBRESOURCES, CommandFailedError
from kubevirt.virtctl.manifests import read_manifest
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.gojson import to_go_json

__all__ = ["expand"]

YAML, JSON = "yaml", "json"


def _read_vm(filename: str) -> dict[str, Any]:
    try:
        document = read_manifest(filename)
    except OSError as err:
        raise CommandFailedError(f"error reading file {err}") from None
    except (ValueError, yaml.YAMLError) as err:
        raise CommandFailedError(f"error decoding VirtualMachine {err}".splitlines()[0]) from None
    if not isinstance(document, dict):
        raise CommandFailedError("error decoding VirtualMachine: the manifest is not an object")
    return document


def _formatted(answer: bytes, output: str) -> str:
    try:
        vm = VirtualMachine.from_dict(json.loads(answer))
    except (ValueError, ApiParseError) as err:
        raise CommandFailedError(f"error decoding the expanded VirtualMachine: {err}") from None
    if output == JSON:
        return json.dumps(to_go_json(vm), indent=1)  # Go's MarshalIndent with a one-space indent
    return manifest_yaml(vm)


@click.command(
    name="expand", help="Return the VirtualMachine object with expanded instancetype and preference."
)
@client_flags
@click.option(
    "--vm",
    "vm_name",
    default="",
    help='Specify VirtualMachine name that should be expanded. Mutually exclusive with "--file" flag.',
)
@click.option(
    "-f",
    "--file",
    "file_path",
    default="",
    help=(
        "If present, the Virtual Machine spec in provided file will be expanded. "
        'Mutually exclusive with "--vm" flag.'
    ),
)
@click.option("-o", "--output", default=YAML, help="Specify a format that will be used to display output.")
@click.pass_context
def expand(ctx: click.Context, /, vm_name: str, file_path: str, output: str, **flags: Any) -> None:
    try:
        click.echo(_expand(ctx, vm_name, file_path, output, flags), nl=False)
    except CommandFailedError as err:
        click.echo(str(err), err=True)
        sys.exit(1)


def _expand(ctx: click.Context, vm_name: str, file_path: str, output: str, flags: dict[str, Any]) -> str:
    if vm_name and file_path:
        raise CommandFailedError(
            "if any flags in the group [file vm] are set none of the others can be; [file vm] were all set"
        )
    if not vm_name and not file_path:
        raise CommandFailedError("error invalid arguments - VirtualMachine name or file must be provided")
    if output not in (YAML, JSON):
        raise CommandFailedError(f"error not supported output format defined: {output}")
    client, namespace = connect(flags_from(ctx, **flags))
    base = f"{SUBRESOURCES}/namespaces/{namespace}"
    if vm_name:
        try:
            answer = client.request("GET", f"{base}/virtualmachines/{vm_name}/expand-spec")
        except ApiError as err:
            raise CommandFailedError(
                f"error expanding VirtualMachine - {vm_name} in namespace - {namespace}: {err.message}"
            ) from None
        return _formatted(answer, output)
    vm = _read_vm(file_path)
    name = (vm.get("metadata") or {}).get("name") or ""
    try:
        answer = client.request("PUT", f"{base}/expand-vm-spec", body=vm)
    except ApiError as err:
        raise CommandFailedError(
            f"error expanding VirtualMachine - {name} in namespace - {namespace}: {err.message}"
        ) from None
    return _formatted(answer, output)
