"""``virtctl create``: print manifests for VMs, instance types, preferences and clones."""

from __future__ import annotations

import click

from kubevirt.virtctl.create.clone import create_clone
from kubevirt.virtctl.create.instancetype import create_instancetype, create_preference
from kubevirt.virtctl.create.vm import create_vm

__all__ = ["create"]


@click.group(name="create")
def create() -> None:
    """Create a manifest for the specified Kind."""


create.add_command(create_vm)
create.add_command(create_instancetype)
create.add_command(create_preference)
create.add_command(create_clone)
