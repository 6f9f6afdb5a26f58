"""Entrypoint of cdi-controller: the project's DataVolume importer controllers (CDI's cdi-deployment)."""

import os
import sys

import click

from kubevirt.cdi_controller import app
from kubevirt.service import binary

IMPORTER_IMAGE_ENV = "IMPORTER_IMAGE"
UPLOADSERVER_IMAGE_ENV = "UPLOADSERVER_IMAGE"  # as CDI's cdi-deployment is given it
CLONER_IMAGE_ENV = "CLONER_IMAGE"
PULL_POLICY_ENV = "PULL_POLICY"


@click.option(
    "--importer-image",
    default=lambda: os.environ.get(IMPORTER_IMAGE_ENV, ""),
    help=f"Image of the importer pods (default: ${IMPORTER_IMAGE_ENV}).",
)
@click.option(
    "--uploadserver-image",
    default=lambda: os.environ.get(UPLOADSERVER_IMAGE_ENV, ""),
    help=f"Image of the cdi-upload-<claim> pods (default: ${UPLOADSERVER_IMAGE_ENV}; none: no uploads).",
)
@click.option(
    "--cloner-image",
    default=lambda: os.environ.get(CLONER_IMAGE_ENV, ""),
    help=f"Image of the clone source pods (default: ${CLONER_IMAGE_ENV}; none: no clones).",
)
@click.option(
    "--pull-policy",
    default=lambda: os.environ.get(PULL_POLICY_ENV, "IfNotPresent"),
    type=click.Choice(["Always", "IfNotPresent", "Never"]),
    help=f"Pull policy of the worker pods (default: ${PULL_POLICY_ENV}, else IfNotPresent).",
)
@click.option("--kubeconfig", default=None, help="Kubeconfig file; in a pod the service account is used.")
@click.option("--namespace", default=None, help="Namespace of the leader Lease (default: the pod's own).")
@click.option(
    "--threads", default=3, show_default=True, type=click.IntRange(1, 64), help="Workers per controller."
)
@click.option(
    "--health-port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port of /healthz and /readyz.",
)
@click.option(
    "--leader-elect/--no-leader-elect", default=True, show_default=True, help="Compete for the leader Lease."
)
@binary(
    "cdi-controller", "Runs the DataVolume, import, upload, clone, CDIConfig and StorageProfile controllers."
)
def main(
    importer_image: str,
    uploadserver_image: str,
    cloner_image: str,
    pull_policy: str,
    kubeconfig: str | None,
    namespace: str | None,
    threads: int,
    health_port: int,
    leader_elect: bool,
) -> None:
    if not importer_image:
        raise click.UsageError(f"--importer-image (or ${IMPORTER_IMAGE_ENV}) is required")
    options = app.Options(
        importer_image=importer_image,
        uploadserver_image=uploadserver_image,
        cloner_image=cloner_image,
        pull_policy=pull_policy,
        kubeconfig=kubeconfig,
        namespace=namespace,
        threads=threads,
        health_port=health_port,
        leader_elect=leader_elect,
    )
    sys.exit(app.run(options))
