"""Which disks a block migration copies: KubeVirt v1.6's classification of the VMI's volumes applied to the
domain's disks."""

from __future__ import annotations

from typing import Any

from kubevirt.virt_launcher.virtwrap.migration_disks import disks_to_copy, is_block_migration

DOMAIN = """<domain type='qemu'><devices>
  <disk type='file' device='disk'><source file='/d/r.qcow2'/><target dev='vda'/><alias name='ua-root'/></disk>
  <disk type='file' device='disk'><source file='/d/ci.iso'/><target dev='vdb'/><readonly/>
    <alias name='ua-cloudinit'/></disk>
  <disk type='block' device='disk'><source dev='/dev/pvc'/><target dev='vdc'/><alias name='ua-data'/></disk>
  <disk type='file' device='disk'><source file='/d/m.img'/><target dev='vdd'/><alias name='ua-moved'/></disk>
  <disk type='file' device='cdrom'><source file='/d/iso'/><target dev='sda'/><alias name='ua-cd'/></disk>
  <disk type='file' device='disk'><source file='/d/ro.img'/><target dev='vde'/><readonly/>
    <alias name='ua-hostro'/></disk>
  <disk type='file' device='disk'><source file='/d/s.img'/><target dev='vdf'/><alias name='ua-nfs'/></disk>
  <disk type='network' device='disk'><source protocol='nbd'/><target dev='vdg'/><alias name='ua-net'/></disk>
</devices></domain>"""


def vmi(**status: Any) -> dict[str, Any]:
    return {
        "spec": {
            "volumes": [
                {"name": "root", "containerDisk": {"image": "guest"}},
                {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#!/bin/sh"}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "moved", "dataVolume": {"name": "moved"}},
                {"name": "cd", "containerDisk": {"image": "iso"}},
                {"name": "hostro", "hostDisk": {"path": "/ro.img", "type": "Disk"}},
                {"name": "nfs", "hostDisk": {"path": "/shared.img", "type": "Disk", "shared": True}},
                {"name": "net", "emptyDisk": {"capacity": "1Gi"}},
            ]
        },
        "status": status,
    }


def test_local_and_generated_disks_are_copied_shared_cdrom_and_foreign_read_only_ones_are_not() -> None:
    assert disks_to_copy(DOMAIN, vmi()) == ["vda", "vdb"]


def test_a_persistent_volume_listed_as_migrated_is_copied() -> None:
    copied = disks_to_copy(DOMAIN, vmi(migratedVolumes=[{"volumeName": "moved"}]))
    assert copied == ["vda", "vdb", "vdd"]


def test_only_a_block_migration_method_asks_for_copies() -> None:
    assert is_block_migration(vmi(migrationMethod="BlockMigration"))
    assert not is_block_migration(vmi(migrationMethod="LiveMigration"))
    assert not is_block_migration({"spec": {}})
