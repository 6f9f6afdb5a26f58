"""Entrypoint of virt-controller: parse flags, wire the application from ``kubevirt.virt_controller``, run."""

import sys
from pathlib import Path

import click

from kubevirt import pod_paths
from kubevirt.service import binary
from kubevirt.service.durations import POSITIVE_DURATION
from kubevirt.virt_controller import app
from kubevirt.virt_controller.controllers import Threads
from kubevirt.virt_controller.services import TemplateParameters

CERT_DIR = Path("/etc/virt-controller/certificates")
THREADS = click.IntRange(min=1)


@click.option("--kubeconfig", default=None, help="Kubeconfig file; in a pod the service account is used.")
@click.option("--listen", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=8182, show_default=True, type=click.IntRange(0, 65535), help="HTTPS port.")
@click.option(
    "--tls-cert-file", type=click.Path(path_type=Path), default=CERT_DIR / "tls.crt", show_default=True
)
@click.option(
    "--tls-key-file", type=click.Path(path_type=Path), default=CERT_DIR / "tls.key", show_default=True
)
@click.option("--launcher-image", default="virt-launcher", show_default=True, help="virt-launcher's image.")
@click.option(
    "--exporter-image", default="virt-exportserver", show_default=True, help="The export server's image."
)
@click.option(
    "--launcher-qemu-timeout",
    default=240,
    show_default=True,
    type=click.IntRange(min=1),
    help="Seconds virt-launcher waits for QEMU (a random 0-119 s is added per pod).",
)
@click.option("--image-pull-secret", default="", help="Secret for pulling the launcher and container disks.")
@click.option("--kubevirt-share-dir", default=pod_paths.VIRT_SHARE_DIR, show_default=True)
@click.option("--ephemeral-disk-dir", default=pod_paths.EPHEMERAL_DISK_DIR, show_default=True)
@click.option("--container-disk-dir", default=pod_paths.CONTAINER_DISK_DIR, show_default=True)
@click.option("--hotplug-disk-dir", default=pod_paths.HOTPLUG_DISK_DIR, show_default=True)
@click.option("--launcher-subgid", default=107, show_default=True, type=click.IntRange(min=0))
@click.option("--node-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--vmi-controller-threads", default=10, show_default=True, type=THREADS)
@click.option("--rs-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--pool-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--vm-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--migration-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--evacuation-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--disruption-budget-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--snapshot-controller-threads", default=6, show_default=True, type=THREADS)
@click.option("--restore-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--export-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--clone-controller-threads", default=3, show_default=True, type=THREADS)
@click.option("--leader-elect-lease-duration", default="15s", show_default=True, type=POSITIVE_DURATION)
@click.option("--leader-elect-renew-deadline", default="10s", show_default=True, type=POSITIVE_DURATION)
@click.option("--leader-elect-retry-period", default="2s", show_default=True, type=POSITIVE_DURATION)
@binary("virt-controller", "Reconciles VMs, VMIs, virt-launcher pods, replica sets, pools and nodes.")
def main(
    kubeconfig: str | None,
    listen: str,
    port: int,
    tls_cert_file: Path,
    tls_key_file: Path,
    launcher_image: str,
    exporter_image: str,
    launcher_qemu_timeout: int,
    image_pull_secret: str,
    kubevirt_share_dir: str,
    ephemeral_disk_dir: str,
    container_disk_dir: str,
    hotplug_disk_dir: str,
    launcher_subgid: int,
    node_controller_threads: int,
    vmi_controller_threads: int,
    rs_controller_threads: int,
    pool_controller_threads: int,
    vm_controller_threads: int,
    migration_controller_threads: int,
    evacuation_controller_threads: int,
    disruption_budget_controller_threads: int,
    snapshot_controller_threads: int,
    restore_controller_threads: int,
    export_controller_threads: int,
    clone_controller_threads: int,
    leader_elect_lease_duration: float,
    leader_elect_renew_deadline: float,
    leader_elect_retry_period: float,
) -> None:
    if not leader_elect_lease_duration > leader_elect_renew_deadline > leader_elect_retry_period:
        raise click.BadParameter(
            "the lease duration must exceed the renew deadline, which must exceed the retry period",
            param_hint="--leader-elect-*",
        )
    options = app.Options(
        listen=listen,
        port=port,
        tls_cert_file=tls_cert_file,
        tls_key_file=tls_key_file,
        kubeconfig=kubeconfig,
        template=TemplateParameters(
            launcher_image=launcher_image,
            exporter_image=exporter_image,
            launcher_qemu_timeout_seconds=launcher_qemu_timeout,
            virt_share_dir=kubevirt_share_dir,
            ephemeral_disk_dir=ephemeral_disk_dir,
            container_disk_dir=container_disk_dir,
            hotplug_disk_dir=hotplug_disk_dir,
            image_pull_secret=image_pull_secret,
            launcher_subgid=launcher_subgid,
        ),
        threads=Threads(
            vm=vm_controller_threads,
            vmi=vmi_controller_threads,
            replicaset=rs_controller_threads,
            pool=pool_controller_threads,
            node=node_controller_threads,
            migration=migration_controller_threads,
            evacuation=evacuation_controller_threads,
            disruption_budget=disruption_budget_controller_threads,
            snapshot=snapshot_controller_threads,
            restore=restore_controller_threads,
            export=export_controller_threads,
            clone=clone_controller_threads,
        ),
        leader_election=app.LeaderElection(
            lease_duration=leader_elect_lease_duration,
            renew_deadline=leader_elect_renew_deadline,
            retry_period=leader_elect_retry_period,
        ),
    )
    sys.exit(app.run(options))
