"""Entrypoint of virt-api: parse flags, wire the application from ``kubevirt.virt_api``, run."""

import math
import sys
from pathlib import Path
from typing import Any

import click

from kubevirt.service import binary
from kubevirt.virt_api import app
from kubevirt.virt_api.rest.wiring import HandlerTLS
from kubevirt.virt_api.webhooks.server import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY_BYTES, ServerLimits
from kubevirt.virt_config import ROLLOUT_LIVE_UPDATE, ROLLOUT_STRATEGIES, ClusterConfig

CERT_DIR = Path("/etc/virt-api/certificates")


class PositiveSeconds(click.ParamType[float]):
    """A finite number of seconds above zero.

    Zero or less would spin the watch loops or drop every request at once; NaN slips through
    ``click.FloatRange`` (every comparison with it is false), so it is refused here explicitly.
    """

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"{value!r} must be a finite number of seconds above 0", param, ctx)
        return seconds


POSITIVE_SECONDS = PositiveSeconds()


@click.option("--kubeconfig", default=None, help="Kubeconfig file; in a pod the service account is used.")
@click.option("--listen", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=8443, show_default=True, type=click.IntRange(0, 65535), help="HTTPS port.")
@click.option("--console-server-port", default=8186, show_default=True, type=int, help="Console server port.")
@click.option(
    "--handler-cert-file",
    default="/etc/virt-handler/clientcertificates/tls.crt",
    show_default=True,
    type=click.Path(path_type=Path),
    help="Client certificate towards virt-handler.",
)
@click.option(
    "--handler-key-file",
    default="/etc/virt-handler/clientcertificates/tls.key",
    show_default=True,
    type=click.Path(path_type=Path),
)
@click.option("--handler-ca-file", default=None, type=click.Path(path_type=Path), help="CA of virt-handler.")
@click.option("--handler-namespace", default=None, help="Namespace of virt-handler pods (default: own).")
@click.option(
    "--externally-managed",
    is_flag=True,
    help="Certificates come from the cluster's PKI: virt-handler's common name is not checked.",
)
@click.option(
    "--subresources-only", is_flag=True, help="Accepted for compatibility with KubeVirt's virt-api."
)
@click.option(
    "--tls-cert-file", default=str(CERT_DIR / "tls.crt"), show_default=True, type=click.Path(path_type=Path)
)
@click.option(
    "--tls-key-file", default=str(CERT_DIR / "tls.key"), show_default=True, type=click.Path(path_type=Path)
)
@click.option(
    "--cert-reload-interval",
    default=2.0,
    show_default=True,
    type=POSITIVE_SECONDS,
    help="Seconds between checks.",
)
@click.option("--feature-gates", default="", help="Comma-separated feature gates enabled in the cluster.")
@click.option(
    "--rollout-strategy",
    default=ROLLOUT_LIVE_UPDATE,
    show_default=True,
    type=click.Choice(ROLLOUT_STRATEGIES),
    help="The cluster's VM rollout strategy.",
)
@click.option(
    "--max-request-bytes", default=DEFAULT_MAX_BODY_BYTES, show_default=True, type=click.IntRange(1)
)
@click.option("--request-timeout", default=DEFAULT_BODY_TIMEOUT, show_default=True, type=POSITIVE_SECONDS)
@click.option(
    "--config-refresh-interval",
    default=5.0,
    show_default=True,
    type=POSITIVE_SECONDS,
    help="KubeVirt CR reads, s.",
)
@binary("virt-api", "KubeVirt's aggregated API server: admission webhooks and subresources.kubevirt.io.")
def main(
    kubeconfig: str | None,
    listen: str,
    port: int,
    console_server_port: int,
    handler_cert_file: Path,
    handler_key_file: Path,
    handler_ca_file: Path | None,
    handler_namespace: str | None,
    externally_managed: bool,
    subresources_only: bool,
    tls_cert_file: Path,
    tls_key_file: Path,
    cert_reload_interval: float,
    feature_gates: str,
    rollout_strategy: str,
    config_refresh_interval: float,
    max_request_bytes: int,
    request_timeout: float,
) -> None:
    del subresources_only  # the webhooks and the subresources are always served together
    options = app.Options(
        listen=listen,
        port=port,
        tls_cert_file=tls_cert_file,
        tls_key_file=tls_key_file,
        config=ClusterConfig.build(feature_gates=feature_gates.split(","), rollout_strategy=rollout_strategy),
        limits=ServerLimits(max_body_bytes=max_request_bytes, body_timeout=request_timeout),
        cert_reload_interval=cert_reload_interval,
        kubeconfig=kubeconfig,
        config_refresh_interval=config_refresh_interval,
        console_server_port=console_server_port,
        handler_tls=HandlerTLS(handler_cert_file, handler_key_file, handler_ca_file, externally_managed),
        handler_namespace=handler_namespace,
    )
    sys.exit(app.run(options))
