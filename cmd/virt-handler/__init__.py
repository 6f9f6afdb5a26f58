"""Entrypoint of virt-handler: parse flags, wire the application from ``kubevirt.virt_handler``, run."""

import socket
import sys
from pathlib import Path

import click

from kubevirt import pod_paths
from kubevirt.service import binary
from kubevirt.virt_handler import app


@click.option("--kubeconfig", default=None, help="Kubeconfig file; in a pod the service account is used.")
@click.option("--hostname-override", default="", help="This node's name (default: the host name).")
@click.option(
    "--pod-ip-address",
    default="",
    help="The handler pod's IP address: migration targets listen on it and publish it.",
)
@click.option("--port", default=8185, show_default=True, type=click.IntRange(0, 65535), help="HTTPS port.")
@click.option("--console-server-port", default=8186, show_default=True, type=click.IntRange(0, 65535))
@click.option("--max-metric-requests", default=3, show_default=True, type=click.IntRange(min=1))
@click.option("--graceful-shutdown-seconds", default=300, show_default=True, type=click.IntRange(min=0))
@click.option("--kubevirt-share-dir", default=pod_paths.VIRT_SHARE_DIR, show_default=True)
@click.option(
    "--kubelet-pods-dir",
    default=Path("/pods"),
    show_default=True,
    type=click.Path(path_type=Path),
    help="Where the kubelet's pods directory is mounted; launcher sockets are found under it.",
)
@click.option("--listen", default="0.0.0.0", show_default=True, help="Address the servers bind to.")
@click.option(
    "--tls-cert-file",
    default=Path("/etc/virt-handler/servercertificates/tls.crt"),
    show_default=True,
    type=click.Path(path_type=Path),
    help="Certificate of the console server (port --console-server-port).",
)
@click.option(
    "--tls-key-file",
    default=Path("/etc/virt-handler/servercertificates/tls.key"),
    show_default=True,
    type=click.Path(path_type=Path),
)
@click.option("--client-cert-file", default="/etc/virt-handler/clientcertificates/tls.crt", show_default=True)
@click.option("--client-key-file", default="/etc/virt-handler/clientcertificates/tls.key", show_default=True)
@click.option(
    "--ca-configmap-name",
    default="kubevirt-ca",
    show_default=True,
    help="ConfigMap holding the CA bundle that signs virt-api's client certificate.",
)
@click.option(
    "--externally-managed",
    is_flag=True,
    help="Certificates come from the cluster's PKI: their common names are not checked.",
)
@click.option("--max-devices", default=1000, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--watchdog-timeout",
    default=30,
    show_default=True,
    type=click.IntRange(min=1),
    help="Seconds a launcher's command socket may refuse connections before its VMI fails.",
)
@click.option(
    "--vm-controller-threads",
    default=app.VM_CONTROLLER_WORKERS,
    show_default=True,
    type=click.IntRange(min=1),
)
@binary("virt-handler", "The node agent: drives each VMI on this node through its virt-launcher.")
def main(
    kubeconfig: str | None,
    hostname_override: str,
    pod_ip_address: str,
    port: int,
    console_server_port: int,
    max_metric_requests: int,
    graceful_shutdown_seconds: int,
    kubevirt_share_dir: str,
    kubelet_pods_dir: Path,
    listen: str,
    tls_cert_file: Path,
    tls_key_file: Path,
    client_cert_file: str,
    client_key_file: str,
    ca_configmap_name: str,
    externally_managed: bool,
    max_devices: int,
    vm_controller_threads: int,
    watchdog_timeout: int,
) -> None:
    options = app.Options(
        node_name=hostname_override or socket.gethostname(),
        kubeconfig=kubeconfig,
        pods_dir=kubelet_pods_dir,
        workers=vm_controller_threads,
        max_devices=max_devices,
        watchdog_timeout=watchdog_timeout,
        listen=listen,
        port=port,
        console_server_port=console_server_port,
        tls_cert_file=tls_cert_file,
        tls_key_file=tls_key_file,
        ca_config_map=ca_configmap_name,
        externally_managed=externally_managed,
        migration_ip=pod_ip_address,
        client_cert_file=Path(client_cert_file),
        client_key_file=Path(client_key_file),
        share_dir=Path(kubevirt_share_dir),
    )
    sys.exit(app.run(options))
