"""Entrypoint of virt-exportserver: read the exporter pod's environment, serve the export until its deadline.

Configured by the environment only, as KubeVirt's: CERT_FILE, KEY_FILE, TOKEN_FILE, DEADLINE, LISTEN_ADDR
and the volume URIs of :mod:`kubevirt.export.paths` (see :mod:`kubevirt.virt_exportserver.config`).
"""

import os
import sys

import click
import structlog

from kubevirt.export.paths import POD_NAME_ENV
from kubevirt.log import get_logger
from kubevirt.service import binary
from kubevirt.virt_exportserver.config import ConfigError, ServerConfig
from kubevirt.virt_exportserver.server import run

COMPONENT = "virt-exportserver"


@binary(COMPONENT, "Serves a VirtualMachineExport's volumes and manifests to holders of its token.")
def main() -> None:
    # KubeVirt names the component after the pod, so that each exporter's lines tell which one wrote them.
    structlog.contextvars.bind_contextvars(component=f"{COMPONENT}-{os.environ.get(POD_NAME_ENV, '')}")
    try:
        config = ServerConfig.from_env(os.environ)
    except ConfigError as err:
        raise click.ClickException(str(err)) from None
    get_logger().info("starting export server", volumes=[volume.path for volume in config.paths.volumes])
    sys.exit(run(config))
