"""Hostile VMIs into the pod's storage preparation: it makes the disks or refuses naming a field."""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kubevirt.virt_launcher.storage import PodStorage, StorageDirs
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import VMIView
from kubevirt_testing.fuzz_inputs import FUZZ_SETTINGS, VMI_SEEDS, json_values, mutated

pytestmark = pytest.mark.timeout(300)
SEEDS = [seed for seed in VMI_SEEDS if (seed.get("spec") or {}).get("volumes")]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> StorageDirs:
    root = tmp_path_factory.mktemp("pod")
    result = StorageDirs(
        container_disk_dir=root / "container-disks",
        ephemeral_disk_dir=root / "ephemeral",
        private_dir=root / "private",
        empty_disk_dir=root / "empty-disks",
        service_account_dir=root / "serviceaccount",
        block_device_dir=root / "dev",
    )
    result.container_disk_dir.mkdir()
    for index in range(8):  # an image for any containerDisk among the first volumes
        image = result.container_disk_dir / f"disk_{index}.img"
        subprocess.run(["qemu-img", "create", "-f", "raw", str(image), "1M"], check=True, capture_output=True)
    return result


@st.composite
def payloads(draw: st.DrawFn) -> bytes:
    if draw(st.integers(min_value=0, max_value=5)) == 0:
        return json.dumps(draw(json_values)).encode()
    return json.dumps(draw(mutated(SEEDS, deep=True))).encode()


def test_the_seeds_have_volumes() -> None:
    assert len(SEEDS) > 10


@FUZZ_SETTINGS
@given(payload=payloads())
def test_prepare_makes_the_disks_or_refuses_cleanly(dirs: StorageDirs, payload: bytes) -> None:
    document = json.loads(payload)
    assume(isinstance(document, dict))  # anything else the command server refuses before storage
    vmi, storage = VMIView(document), PodStorage(dirs)
    message = ""
    try:
        storage.disks_info(vmi)
        storage.block_volumes(vmi)
        storage.prepare(vmi)
    except StoragePreparationError as err:  # any other exception fails the test
        message = str(err)
    assert not message or ": " in message  # the field or object at fault, then why
