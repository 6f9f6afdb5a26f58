"""Entrypoint of node-labeller: writes libvirt's view of this node for virt-handler's node labeller.

Runs in virt-handler's pod before virt-handler (an init container from the launcher image).
"""

import sys
from pathlib import Path

import click

from kubevirt.service import binary
from kubevirt.virt_launcher import node_capabilities


@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("/var/lib/kubevirt-node-labeller"),
    show_default=True,
    help="Where virt-handler reads the capabilities from.",
)
@click.option(
    "--libvirt-runtime-dir",
    type=click.Path(path_type=Path),
    default=Path("/var/run/kubevirt-node-labeller/libvirt"),
    show_default=True,
    help="The private libvirtd's directories.",
)
@click.option("--libvirt-uri", default=None, help="Use this libvirt instead of starting a private libvirtd.")
@click.option("--libvirt-capabilities-cache", type=click.Path(path_type=Path), default=None)
@click.option("--force-emulation", is_flag=True, help="Describe QEMU's TCG even where KVM is usable.")
@binary("node-labeller", "Writes the node's libvirt capabilities for virt-handler's node labeller.")
def main(
    output_dir: Path,
    libvirt_runtime_dir: Path,
    libvirt_uri: str | None,
    libvirt_capabilities_cache: Path | None,
    force_emulation: bool,
) -> None:
    sys.exit(
        node_capabilities.run(
            output_dir,
            runtime_dir=libvirt_runtime_dir,
            libvirt_uri=libvirt_uri,
            capabilities_cache=libvirt_capabilities_cache,
            force_emulation=force_emulation,
        )
    )
