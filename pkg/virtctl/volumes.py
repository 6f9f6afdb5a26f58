"""``virtctl addvolume`` and ``removevolume``: hotplug a DataVolume or PersistentVolumeClaim into a running
VM, or take it out again, as KubeVirt's virtctl does.

The volume's source is a DataVolume of the volume's name if one can be read, else a claim of that name.
``--persist`` sends the request to the VM (kept in its spec), otherwise to the VMI. A request that lost
a race with another change to the same lists (the API server's 422) is sent again, up to 15 times.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import click

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, ApiError, KubeClient
from kubevirt.client.resources import DATA_VOLUMES
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.lifecycle import DRY_RUN_HELP, CommandFailedError, dry_run, put, run_action
from kubevirt_api.core.v1 import AddVolumeOptions, RemoveVolumeOptions
from kubevirt_api.gojson import to_go_json

# What client-go reports for the API server's 422 when a JSON patch ``test`` failed.
CONCURRENT_ERROR = "the server rejected our request due to an error in our request"
MAX_RETRIES = 15
SCSI, VIRTIO = "scsi", "virtio"
CACHE_MODES = ("none", "writethrough", "writeback")
VOLUME_NAME_HELP = "name used in volumes section of spec"
PERSIST_HELP = "if set, the added volume will be persisted in the VM spec (if it exists)"


def volume_source(client: KubeClient, namespace: str, volume: str) -> dict[str, Any]:
    """A DataVolume of that name if one can be read (any failure falls back), else a claim of that name."""
    try:
        client.get(DATA_VOLUMES, namespace, volume)
        return {"dataVolume": {"name": volume, "hotpluggable": True}}
    except ApiError:
        pass
    try:
        client.get(PERSISTENT_VOLUME_CLAIMS, namespace, volume)
        return {"persistentVolumeClaim": {"claimName": volume, "hotpluggable": True}}
    except ApiError:
        raise CommandFailedError(
            f"error adding volume, Volume {volume} is not a DataVolume or PersistentVolumeClaim"
        ) from None


def disk_for(volume: str, disk_type: str, bus: str, serial: str, cache: str) -> dict[str, Any]:
    """The disk to plug: its target by ``disk_type`` on ``bus``; the serial defaults to the volume name."""
    disk: dict[str, Any] = {"name": ""}
    if disk_type == "disk":
        if bus not in (SCSI, VIRTIO):
            raise CommandFailedError(
                f"Invalid bus type '{bus}' for disk. Only '{SCSI}' and '{VIRTIO}' are supported."
            )
        disk["disk"] = {"bus": bus}
    elif disk_type == "lun":
        if bus != SCSI:
            raise CommandFailedError(
                f"Invalid bus type '{bus}' for LUN disk. Only '{SCSI}' bus is supported."
            )
        disk["lun"] = {"bus": bus}
    else:
        raise CommandFailedError(f"Invalid disk type '{disk_type}'. Only LUN and Disk are supported.")
    disk["serial"] = serial or volume
    if cache:
        if cache not in CACHE_MODES:
            raise CommandFailedError(f"error adding volume, invalid cache value {cache}")
        disk["cache"] = cache
    return disk


def send_with_retries(send: Callable[[], None], failure: str) -> None:
    """Sends until accepted; a lost race (the 422 of a failed ``test``) is retried after a short random
    pause, any other refusal ends the command with the server's message behind ``failure``."""
    for attempt in range(1, MAX_RETRIES + 1):
        try:
            send()
            return
        except ApiError as err:
            if err.message != CONCURRENT_ERROR:
                raise CommandFailedError(f"error {failure} volume, {err.message}") from None
        if attempt < MAX_RETRIES:
            time.sleep(attempt * random.randrange(5) / 1000)
    raise CommandFailedError(f"error {failure} volume after {MAX_RETRIES} retries")


def _target(persist: bool) -> str:
    return "virtualmachines" if persist else "virtualmachineinstances"


def _announce_dry_run(dry: bool) -> None:
    if dry:
        click.echo("Dry Run execution")


@click.command(name="addvolume", help="add a volume to a running VM")
@click.argument("vmi")
@click.option("--volume-name", required=True, help=VOLUME_NAME_HELP)
@click.option("--serial", default="", help="serial number you want to assign to the disk")
@click.option("--cache", default="", help="caching options attribute control the cache mechanism")
@click.option("--persist", is_flag=True, help=PERSIST_HELP)
@click.option("--dry-run", "dry", is_flag=True, help=DRY_RUN_HELP)
@click.option(
    "--disk-type", default="disk", help="specifies disk type to be hotplugged (disk/lun). Disk by default."
)
@click.option("--bus", default=SCSI, help=f"specifies disk bus. {SCSI} by default.")
@client_flags
@click.pass_context
def addvolume(
    ctx: click.Context,
    /,
    vmi: str,
    volume_name: str,
    serial: str,
    cache: str,
    persist: bool,
    dry: bool,
    disk_type: str,
    bus: str,
    **flags: Any,
) -> None:
    def action() -> str:
        client, namespace = connect(flags_from(ctx, **flags))
        _announce_dry_run(dry)
        source = volume_source(client, namespace, volume_name)
        disk = disk_for(volume_name, disk_type, bus, serial, cache)
        # The options as client-go marshals them (Go's field order, omitempty fields left out).
        options = AddVolumeOptions.from_dict(
            {"name": volume_name, "disk": disk, "volumeSource": source, "dryRun": dry_run(dry) or None}
        )
        body = to_go_json(options)
        send_with_retries(lambda: put(client, namespace, _target(persist), vmi, "addvolume", body), "adding")
        return f"Successfully submitted add volume request to VM {vmi} for volume {volume_name}"

    run_action(action)


@click.command(name="removevolume", help="remove a volume from a running VM")
@click.argument("vmi")
@click.option("--volume-name", required=True, help=VOLUME_NAME_HELP)
@click.option("--persist", is_flag=True, help=PERSIST_HELP)
@click.option("--dry-run", "dry", is_flag=True, help=DRY_RUN_HELP)
@client_flags
@click.pass_context
def removevolume(
    ctx: click.Context, /, vmi: str, volume_name: str, persist: bool, dry: bool, **flags: Any
) -> None:
    def action() -> str:
        client, namespace = connect(flags_from(ctx, **flags))
        _announce_dry_run(dry)
        options = RemoveVolumeOptions.from_dict({"name": volume_name, "dryRun": dry_run(dry) or None})
        body = to_go_json(options)
        send_with_retries(
            lambda: put(client, namespace, _target(persist), vmi, "removevolume", body), "removing"
        )
        return f"Successfully submitted remove volume request to VM {vmi} for volume {volume_name}"

    run_action(action)


COMMANDS = (addvolume, removevolume)
