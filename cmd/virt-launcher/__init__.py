"""Entrypoint of virt-launcher: parse flags, wire the application from ``kubevirt.virt_launcher``, run."""
# ruff: noqa: E402  (one statement must run before the imports)

import os
import sys
from pathlib import Path

# The launcher logs JSON only: keep structlog from loading its console renderer's pretty-printing
# library, which would cost the long-lived launcher ~10 MiB for nothing.
sys.modules.setdefault("rich", None)  # type: ignore[arg-type]

import click

from kubevirt import pod_paths
from kubevirt.service import binary
from kubevirt.service.durations import parse_duration
from kubevirt.virt_launcher.convert_worker import ConversionWorker
from kubevirt.virt_launcher.virtwrap.vmi import InvalidVMIError, check_uid


def _uid(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return check_uid(value, "--uid") if value else value
    except InvalidVMIError as err:
        raise click.BadParameter(str(err).removeprefix("--uid: ")) from err


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err


@click.option("--name", required=True, help="Name of the VirtualMachineInstance.")
@click.option("--namespace", required=True, help="Namespace of the VirtualMachineInstance.")
@click.option("--uid", required=True, callback=_uid, help="UID of the VirtualMachineInstance.")
@click.option("--kubevirt-share-dir", type=click.Path(path_type=Path), default=Path(pod_paths.VIRT_SHARE_DIR))
@click.option(
    "--ephemeral-disk-dir", type=click.Path(path_type=Path), default=Path(pod_paths.EPHEMERAL_DISK_DIR)
)
@click.option(
    "--container-disk-dir", type=click.Path(path_type=Path), default=Path(pod_paths.CONTAINER_DISK_DIR)
)
@click.option("--hotplug-disk-dir", type=click.Path(path_type=Path), default=Path(pod_paths.HOTPLUG_DISK_DIR))
@click.option("--grace-period-seconds", type=click.IntRange(min=0), default=30, show_default=True)
@click.option("--qemu-timeout", default="3m", show_default=True, callback=_duration, help="Go duration.")
@click.option("--allow-emulation", is_flag=True, help="Use QEMU's TCG emulation when /dev/kvm is unusable.")
@click.option(
    "--force-emulation",
    is_flag=True,
    help="Always emulate (TCG), even where /dev/kvm opens but does not work.",
)
@click.option(
    "--libvirt-uri", default=None, help="Use this libvirt instead of starting a libvirtd of our own (tests)."
)
@click.option(
    "--libvirt-runtime-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="State of our own libvirtd (default: <private dir>/libvirt).",
)
@click.option(
    "--libvirt-capabilities-cache",
    type=click.Path(path_type=Path),
    default=None,
    help="Seed and keep libvirt's QEMU capabilities here (spares a slow probe at start).",
)
@click.option(
    "--kubevirt-private-dir", type=click.Path(path_type=Path), default=Path(pod_paths.VIRT_PRIVATE_DIR)
)
@click.option(
    "--hook-sidecars", type=click.IntRange(min=0), default=0, help="Accepted; hook sidecars are not used."
)
@click.option("--keep-after-failure", is_flag=True, help="Accepted for compatibility (a monitor's concern).")
@click.option("--ovmf-path", default="/usr/share/OVMF", show_default=True, help="Where the EFI firmware is.")
@click.option("--libvirt-log-filters", default="", help="libvirt's log_filters for our own libvirtd.")
@click.option(
    "--simulate-crash", is_flag=True, help="Exit at once with a failure (for testing crash handling)."
)
@click.option(
    "--run-as-nonroot",
    is_flag=True,
    help="Run libvirt in session mode as this (non-root) user; QEMU runs as that user too.",
)
@click.option(
    "--disk-memory-limit",
    type=int,
    default=0,
    help="Memory limit (bytes) for qemu-img reading a containerDisk's image (0: KubeVirt's default).",
)
@click.option("--image-volume", is_flag=True, help="Accepted for compatibility.")
@click.option("--qemu-agent-sys-interval", type=int, default=120, help="Accepted; no guest agent polling.")
@click.option("--qemu-agent-file-interval", type=int, default=300, help="Accepted; no guest agent polling.")
@click.option("--qemu-agent-user-interval", type=int, default=10, help="Accepted; no guest agent polling.")
@click.option(
    "--qemu-agent-version-interval", type=int, default=300, help="Accepted; no guest agent polling."
)
@click.option(
    "--qemu-fsfreeze-status-interval", type=int, default=5, help="Accepted; no guest agent polling."
)
@binary("virt-launcher", "Runs in each VMI's pod and owns the libvirt domain there.")
def main(**flags: object) -> None:
    if flags["simulate_crash"]:
        sys.exit("virt-launcher: simulated crash (--simulate-crash)")
    from kubevirt.virt_launcher import app

    # The conversion worker starts now, a fork of this still single-threaded process holding the
    # launcher's imports: it imports only the typed API and the converter, while the launcher goes on
    # to start libvirt, and the first sync does not wait for them.
    converter = ConversionWorker()
    converter.start()

    config = app.LauncherConfig(
        name=str(flags["name"]),
        namespace=str(flags["namespace"]),
        uid=str(flags["uid"]),
        share_dir=Path(str(flags["kubevirt_share_dir"])),
        private_dir=Path(str(flags["kubevirt_private_dir"])),
        ephemeral_disk_dir=Path(str(flags["ephemeral_disk_dir"])),
        container_disk_dir=Path(str(flags["container_disk_dir"])),
        hotplug_disk_dir=Path(str(flags["hotplug_disk_dir"])),
        grace_period_seconds=int(str(flags["grace_period_seconds"])),
        qemu_timeout=float(str(flags["qemu_timeout"])),
        libvirt_uri=None if flags["libvirt_uri"] is None else str(flags["libvirt_uri"]),
        libvirt_runtime_dir=None
        if flags["libvirt_runtime_dir"] is None
        else Path(str(flags["libvirt_runtime_dir"])),
        libvirt_capabilities_cache=(
            None
            if flags["libvirt_capabilities_cache"] is None
            else Path(str(flags["libvirt_capabilities_cache"]))
        ),
        allow_emulation=bool(flags["allow_emulation"]),
        force_emulation=bool(flags["force_emulation"]),
        pod_name=os.environ.get("POD_NAME", ""),
        libvirt_log_filters=str(flags["libvirt_log_filters"]),
        ovmf_path=str(flags["ovmf_path"]),
        disk_memory_limit=int(str(flags["disk_memory_limit"])),
        run_as_nonroot=bool(flags["run_as_nonroot"]),
    )
    launcher = app.Launcher(config, converter, warm_up=converter.start)
    launcher.install_signal_handlers()
    sys.exit(launcher.run())
