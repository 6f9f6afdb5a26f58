"""Entrypoint of virt-operator: parse flags, wire the application from ``kubevirt.virt_operator``, run."""

import sys

import click

from kubevirt.client import install_namespace
from kubevirt.service import binary
from kubevirt.service.durations import POSITIVE_DURATION
from kubevirt.virt_operator import app
from kubevirt.virt_operator.resource.release import DEFAULT_OPERATOR_IMAGE, OPERATOR_IMAGE_ENV


@click.option("--kubeconfig", default=None, help="Kubeconfig file; in a pod the service account is used.")
@click.option("--listen", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=8443, show_default=True, type=click.IntRange(0, 65535), help="HTTPS port.")
@click.option("--namespace", default=None, envvar="POD_NAMESPACE", help="Install namespace (default: own).")
@click.option(
    "--operator-image",
    default=DEFAULT_OPERATOR_IMAGE,
    envvar=OPERATOR_IMAGE_ENV,
    show_default=True,
    help="This operator's image: the registry and tag of the components when the CR names none.",
)
@click.option("--leader-elect-lease-duration", default="15s", type=POSITIVE_DURATION, show_default=True)
@click.option("--leader-elect-renew-deadline", default="10s", type=POSITIVE_DURATION, show_default=True)
@click.option("--leader-elect-retry-period", default="2s", type=POSITIVE_DURATION, show_default=True)
@binary("virt-operator", "Installs and upgrades KubeVirt from a KubeVirt custom resource.")
def main(
    kubeconfig: str | None,
    listen: str,
    port: int,
    namespace: str | None,
    operator_image: str,
    leader_elect_lease_duration: float,
    leader_elect_renew_deadline: float,
    leader_elect_retry_period: float,
) -> None:
    options = app.Options(
        namespace=install_namespace(namespace),
        operator_image=operator_image,
        kubeconfig=kubeconfig,
        listen=listen,
        port=port,
        lease_duration=leader_elect_lease_duration,
        renew_deadline=leader_elect_renew_deadline,
        retry_period=leader_elect_retry_period,
    )
    sys.exit(app.run(options))
