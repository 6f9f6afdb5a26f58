"""The export server's paths as the controller writes them into the pod and the server reads them back."""

from kubevirt.admission.k8s_names import LABEL_MAX, bounded_name
from kubevirt.export.paths import (
    BLOCK_MOUNT_PATH,
    ServerPaths,
    VolumeInfo,
    mount_path,
    pod_volume_name,
    volume_env,
)


def test_bounded_name_keeps_short_names_whole() -> None:
    assert bounded_name("virt-export", "my-vm", LABEL_MAX) == "virt-export-my-vm"


def test_bounded_name_hashes_the_base_when_the_suffix_fits() -> None:
    suffix = "s" * 52
    name = bounded_name("virt-export", suffix, LABEL_MAX)
    # FNV-1a of "virt-export", as OpenShift's naming.GetName writes it.
    assert name == f"v-{_fnv('virt-export')}-{suffix}"
    assert len(name) == LABEL_MAX


def test_bounded_name_drops_a_suffix_too_long_to_keep() -> None:
    name = bounded_name("export-token", "x" * 80, LABEL_MAX)
    assert name == "export-token-" + _fnv("export-token-" + "x" * 80)


def test_fnv_matches_the_published_test_vector() -> None:
    assert _fnv("a") == "e40c292c"
    assert _fnv("foobar") == "bf9cf968"


def test_pod_volume_names_replace_dots_and_bound_long_names() -> None:
    assert pod_volume_name("disk.one") == "disk-one"
    long_claim = "c" * 70
    assert pod_volume_name(long_claim) == bounded_name("virt-export", long_claim, LABEL_MAX)


def test_server_paths_read_back_what_the_controller_wrote() -> None:
    env = {
        **volume_env(0, mount_path("root.disk", block=True), "root.disk", raw=True),
        **volume_env(1, mount_path("data", block=False), "data", raw=False),
        "EXPORT_VM_DEF_URI": "/manifests/all",
        "UNRELATED": "x",
    }
    paths = ServerPaths.from_env(env)
    assert paths.vm_uri == "/manifests/all"
    assert paths.secret_uri == ""
    assert paths.volume_info("root.disk") == VolumeInfo(
        path=f"{BLOCK_MOUNT_PATH}/root-disk",
        raw_uri="/volumes/root.disk/disk.img",
        raw_gzip_uri="/volumes/root.disk/disk.img.gz",
    )
    data = paths.volume_info("data")
    assert data is not None
    assert (data.archive_uri, data.dir_uri, data.raw_uri) == (
        "/volumes/data/disk.tar.gz",
        "/volumes/data/dir/",
        "",
    )
    assert paths.volume_info("missing") is None


def _fnv(text: str) -> str:
    from kubevirt.admission.k8s_names import _fnv32a_hex

    return _fnv32a_hex(text)
