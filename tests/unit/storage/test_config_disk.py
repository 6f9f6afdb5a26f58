"""Config volumes as ISO images: the kubelet's layout is followed inside the volume, never out of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubevirt import config_disk
from kubevirt_testing.iso import read_iso


def kubelet_volume(directory: Path, files: dict[str, str]) -> None:
    """The atomic-writer layout: keys are links into ..data, which links to a timestamped directory."""
    data = directory / "..2026_12_01_10_00_00.1"
    for name, content in files.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(content)
    (directory / "..data").symlink_to(data.name)
    for top in {name.split("/")[0] for name in files}:
        (directory / top).symlink_to(f"..data/{top}")


def test_a_config_map_volume_becomes_an_image(tmp_path: Path) -> None:
    source = config_disk.source_path(tmp_path, tmp_path / "sa", config_disk.CONFIG_MAP, "app-config")
    assert source == tmp_path / "config-map" / "app-config"
    source.mkdir(parents=True)
    kubelet_volume(source, {"option1": "value1", "nested/option2": "value2"})

    files = config_disk.read_files(source)
    assert files == {"option1": b"value1", "nested/option2": b"value2"}
    path = config_disk.iso_path(tmp_path, config_disk.CONFIG_MAP, "app-config")
    assert path == tmp_path / "config-map-disks" / "app-config.iso"
    config_disk.write(path, "", files)
    assert read_iso(path) == ("cfgdata", files)
    assert path.stat().st_size % (1 << 20) == 0  # cylinder-aligned, as xorrisofs -partition_cyl_align


def test_the_service_account_image_and_a_label(tmp_path: Path) -> None:
    source = tmp_path / "serviceaccount"
    source.mkdir()
    kubelet_volume(source, {"token": "eyJ...", "namespace": "default", "ca.crt": "-----BEGIN"})
    path = config_disk.iso_path(tmp_path, config_disk.SERVICE_ACCOUNT, "sa")
    assert path == tmp_path / "service-account-disk" / "service-account.iso"
    config_disk.write(path, "SA", config_disk.read_files(source))
    label, files = read_iso(path)
    assert label == "SA"
    assert set(files) == {"token", "namespace", "ca.crt"}


def test_links_out_of_the_volume_lead_nowhere(tmp_path: Path) -> None:
    (tmp_path / "host-secret").write_text("root:x")
    source = tmp_path / "secret" / "s"
    source.mkdir(parents=True)
    (source / "key").write_text("fine")
    (source / "absolute").symlink_to(tmp_path / "host-secret")
    with pytest.raises(config_disk.ConfigDiskError, match="absolute: No such file"):
        config_disk.read_files(source)
    (source / "absolute").unlink()
    (source / "climbing").symlink_to("../../host-secret")
    with pytest.raises(config_disk.ConfigDiskError, match="climbing: No such file"):
        config_disk.read_files(source)


def test_too_much_data_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(bytes(config_disk.MAX_TOTAL_BYTES + 1))
    with pytest.raises(config_disk.ConfigDiskError, match="more than"):
        config_disk.read_files(tmp_path)


def test_an_unmounted_volume_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(config_disk.ConfigDiskError, match="not mounted"):
        config_disk.read_files(tmp_path / "missing")
