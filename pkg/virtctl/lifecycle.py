"""virtctl's lifecycle commands: start, stop, restart, migrate, pause, unpause, soft-reboot, reset.

Each is one PUT on the ``subresources.kubevirt.io`` API through the user's kubeconfig. Success prints
KubeVirt's line ("VM <name> was scheduled to <command>"); a refusal prints the server's message
behind KubeVirt's prefix on stderr and exits 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from kubevirt.client import (
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINES,
    ApiError,
    KubeClient,
    NotFoundError,
)
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt_api.core.v1 import FINAL_MIGRATION_PHASES

SUBRESOURCES = "/apis/subresources.kubevirt.io/v1"
DRY_RUN_HELP = (
    "--dry-run=false: Flag used to set whether to perform a dry run or not. "
    "If true the command will be executed without performing any changes."
)
GRACE_HELP = (
    "--grace-period=-1: Period of time in seconds given to the VMI to terminate gracefully. "
    "Can only be set to 0 when --force is true (force deletion). Currently only setting 0 is supported."
)
FORCE_HELP = (
    "--force=false: Only used when grace-period=0. If true, immediately remove VMI pod from API and bypass "
    "graceful deletion."
)
NOT_BOTH = "Must both use --force=true and set --grace-period."
EXIT_FAILED = 1


class CommandFailedError(Exception):
    """What the command prints on stderr before exiting 1."""


def put(
    client: KubeClient, namespace: str, kind: str, name: str, operation: str, body: dict[str, Any] | None
) -> None:
    """Sends the options as Go's encoder does: fields at their zero value are left out. ``None`` sends
    no body at all (client-go's soft reboot)."""
    path = f"{SUBRESOURCES}/namespaces/{namespace}/{kind}/{name}/{operation}"
    if body is None:
        client.request("PUT", path)
        return
    sent = {key: value for key, value in body.items() if not (value is None or value is False or value == [])}
    client.request("PUT", path, body=sent)


def dry_run(enabled: bool) -> list[str]:
    return ["All"] if enabled else []


def run_action(action: Callable[[], str]) -> None:
    """Prints the success line, or the failure on stderr with exit code 1 (as cobra's virtctl does)."""
    try:
        line = action()
    except CommandFailedError as err:
        click.echo(str(err), err=True)
        sys.exit(EXIT_FAILED)
    click.echo(line)


def _grace_flags(force: bool, grace_period: int | None) -> int | None:
    """The grace period to send: only with --force, and then --grace-period must be given too."""
    if (grace_period is not None) != force:
        raise CommandFailedError(NOT_BOTH)
    return grace_period if force else None


def _vm_command(name: str, help_text: str) -> Callable[[Callable[..., None]], click.Command]:
    def decorate(function: Callable[..., None]) -> click.Command:
        return click.command(name=name, help=help_text)(client_flags(function))

    return decorate


@_vm_command("start", "Start a virtual machine.")
@click.argument("vm")
@click.option(
    "--paused", is_flag=True, help="--paused=false: If set to true, start virtual machine in paused state"
)
@click.option("--dry-run", "dry", is_flag=True, help=DRY_RUN_HELP)
@click.pass_context
def start(ctx: click.Context, /, vm: str, paused: bool, dry: bool, **flags: Any) -> None:
    def action() -> str:
        client, namespace = connect(flags_from(ctx, **flags))
        body: dict[str, Any] = {"paused": paused, "dryRun": dry_run(dry)}
        try:
            put(client, namespace, "virtualmachines", vm, "start", body)
        except ApiError as err:
            raise CommandFailedError(f"Error starting VirtualMachine {err.message}") from None
        return f"VM {vm} was scheduled to start"

    run_action(action)


def _stop_or_restart(command: str, field: str, error: str, forced_error: str) -> click.Command:
    @_vm_command(command, f"{command.capitalize()} a virtual machine.")
    @click.argument("vm")
    @click.option("--force", is_flag=True, help=FORCE_HELP)
    @click.option("--grace-period", type=int, default=None, help=GRACE_HELP)
    @click.option("--dry-run", "dry", is_flag=True, help=DRY_RUN_HELP)
    @click.pass_context
    def run(
        ctx: click.Context, /, vm: str, force: bool, grace_period: int | None, dry: bool, **flags: Any
    ) -> None:
        def action() -> str:
            grace = _grace_flags(force, grace_period)
            client, namespace = connect(flags_from(ctx, **flags))
            body: dict[str, Any] = {"dryRun": dry_run(dry)}
            if grace is not None:
                body[field] = grace
            try:
                put(client, namespace, "virtualmachines", vm, command, body)
            except ApiError as err:
                raise CommandFailedError((forced_error if force else error).format(err.message)) from None
            return f"VM {vm} was scheduled to {command}"

        run_action(action)

    return run


stop = _stop_or_restart(
    "stop", "gracePeriod", "error stopping VirtualMachine {}", "error force stopping VirtualMachine: {}"
)
restart = _stop_or_restart(
    "restart",
    "gracePeriodSeconds",
    "error restarting VirtualMachine {}",
    "error force restarting VirtualMachine: {}",
)


def _node_selector(_ctx: click.Context, _param: click.Parameter, value: str | None) -> dict[str, str] | None:
    if not value:
        return None
    selector: dict[str, str] = {}
    for pair in value.split(","):
        key, sep, item = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{pair} must be formatted as key=value")
        selector[key] = item
    return selector


@_vm_command("migrate", "Migrate a virtual machine.")
@click.argument("vm")
@click.option(
    "--addedNodeSelector",
    "added_node_selector",
    callback=_node_selector,
    default=None,
    help="--addedNodeSelector=key=value1,key2=value2: an additional node selector for this migration.",
)
@click.option("--dry-run", "dry", is_flag=True, help=DRY_RUN_HELP)
@click.pass_context
def migrate(
    ctx: click.Context, /, vm: str, added_node_selector: dict[str, str] | None, dry: bool, **flags: Any
) -> None:
    def action() -> str:
        client, namespace = connect(flags_from(ctx, **flags))
        body: dict[str, Any] = {"dryRun": dry_run(dry)}
        if added_node_selector:
            body["addedNodeSelector"] = added_node_selector
        try:
            put(client, namespace, "virtualmachines", vm, "migrate", body)
        except ApiError as err:
            raise CommandFailedError(f"Error migrating VirtualMachine {err.message}") from None
        return f"VM {vm} was scheduled to migrate"

    run_action(action)


@_vm_command("migrate-cancel", "Cancel migration of a virtual machine.")
@click.argument("vm")
@click.pass_context
def migrate_cancel(ctx: click.Context, /, vm: str, **flags: Any) -> None:
    def action() -> str:
        client, namespace = connect(flags_from(ctx, **flags))
        try:
            migrations, _ = client.list(
                VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, label_selector=f"kubevirt.io/vmi-name=={vm}"
            )
        except ApiError as err:
            raise CommandFailedError(
                f"Error fetching virtual machine instance migration list  {err.message}"
            ) from None
        for migration in migrations:
            if (migration.get("status") or {}).get("phase") in FINAL_MIGRATION_PHASES:
                continue
            name = migration["metadata"]["name"]
            try:
                client.delete(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, namespace, name)
            except ApiError as err:
                raise CommandFailedError(
                    f"Error canceling migration {name} of a VirtualMachine {vm}: {err.message}"
                ) from None
            return f"VM {vm} was scheduled to migrate-cancel"
        raise CommandFailedError(f"Found no migration to cancel for {vm}")

    run_action(action)


RESOURCE_TYPES = {"virtualmachine": "vm", "vm": "vm", "virtualmachineinstance": "vmi", "vmi": "vmi"}


def _pause_or_unpause(command: str, verb: str) -> click.Command:
    @_vm_command(command, f"{command.capitalize()} a virtual machine")
    @click.argument("resource_type")
    @click.argument("name")
    @click.option("--dry-run", "dry", is_flag=True, help=DRY_RUN_HELP)
    @click.pass_context
    def run(ctx: click.Context, /, resource_type: str, name: str, dry: bool, **flags: Any) -> None:
        def action() -> str:
            kind = RESOURCE_TYPES.get(resource_type.lower())
            if kind is None:
                raise CommandFailedError(f"unsupported resource type {resource_type}")
            client, namespace = connect(flags_from(ctx, **flags))
            if dry:  # KubeVirt's pause prints this line on stderr, its unpause on stdout
                click.echo("Dry Run execution", err=command == "pause")
            failure = f"Error {verb} VirtualMachineInstance {name}"
            if kind == "vm":
                _check_vm(client, namespace, name)
            try:
                put(client, namespace, "virtualmachineinstances", name, command, {"dryRun": dry_run(dry)})
            except NotFoundError as err:
                if kind == "vm" and command == "pause":
                    raise CommandFailedError(_vmi_missing(client, namespace, name)) from None
                raise CommandFailedError(f"{failure}: {err.message}") from None
            except ApiError as err:
                raise CommandFailedError(f"{failure}: {err.message}") from None
            return f"VMI {name} was scheduled to {command}"

        run_action(action)

    return run


def _check_vm(client: KubeClient, namespace: str, name: str) -> None:
    try:
        client.get(VIRTUAL_MACHINES, namespace, name)
    except ApiError as err:
        raise CommandFailedError(f"Error getting VirtualMachine {name}: {err.message}") from None


def _vmi_missing(client: KubeClient, namespace: str, name: str) -> str:
    """Pausing a VM without a VMI: say whether the VM is meant to run at all."""
    vm = client.get(VIRTUAL_MACHINES, namespace, name)
    spec = vm.get("spec") or {}
    halted = (
        spec.get("runStrategy") == "Halted"
        or spec.get("running") is False
        or (spec.get("runStrategy") is None and spec.get("running") is None)
    )
    if halted:
        return f"Error pausing VirtualMachineInstance {name}. VirtualMachine {name} is not set to run"
    return f"Error pausing VirtualMachineInstance {name}, it was not found"


pause = _pause_or_unpause("pause", "pausing")
unpause = _pause_or_unpause("unpause", "unpausing")


@_vm_command("soft-reboot", "Soft reboot a virtual machine instance")
@click.argument("vmi")
@click.pass_context
def soft_reboot(ctx: click.Context, /, vmi: str, **flags: Any) -> None:
    def action() -> str:
        client, namespace = connect(flags_from(ctx, **flags))
        try:
            put(client, namespace, "virtualmachineinstances", vmi, "softreboot", None)
        except ApiError as err:
            raise CommandFailedError(
                f"Error soft rebooting VirtualMachineInstance {vmi}: {err.message}"
            ) from None
        return f"VMI {vmi} was scheduled to soft-reboot"

    run_action(action)


@_vm_command("reset", "Reset a virtual machine instance")
@click.argument("vmi")
@click.pass_context
def reset(ctx: click.Context, /, vmi: str, **flags: Any) -> None:
    def action() -> str:
        client, namespace = connect(flags_from(ctx, **flags))
        try:
            put(client, namespace, "virtualmachineinstances", vmi, "reset", None)
        except ApiError as err:
            # KubeVirt's wording, spelling included.
            raise CommandFailedError(f"Error reseting VirtualMachineInstance {vmi}: {err.message}") from None
        return f"VMI {vmi} was scheduled to reset"

    run_action(action)


COMMANDS = (start, stop, restart, migrate, migrate_cancel, pause, unpause, soft_reboot, reset)
