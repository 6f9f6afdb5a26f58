"""What an export server serves, and where: the contract between the export controller and the server.

virt-controller writes it into the exporter pod's environment; virt-exportserver reads it back. The names,
paths and URIs are KubeVirt v1.6's (``pkg/storage/export/export``), so that either side works with the
other's KubeVirt counterpart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from kubevirt.admission.k8s_names import LABEL_MAX, bounded_name

EXPORT_PREFIX = "virt-export"
URL_BASE_PATH = "/volumes"
BLOCK_MOUNT_PATH = "/dev/export-volumes"
FILESYSTEM_MOUNT_PATH = "/export-volumes"

# Served by the exporter and linked from the export's status.
MANIFESTS_PATH = "/manifests/all"
SECRET_MANIFEST_PATH = "/manifests/secret"
READINESS_PATH = "/exportready"

VM_DEFINITION_ENV = "EXPORT_VM_DEF_URI"
SECRET_DEFINITION_ENV = "EXPORT_SECRET_DEF_URI"
# The server's TLS pair, its token and when it stops; POD_NAME is the pod's own (a downward API field).
CERT_FILE_ENV = "CERT_FILE"
KEY_FILE_ENV = "KEY_FILE"
TOKEN_FILE_ENV = "TOKEN_FILE"
DEADLINE_ENV = "DEADLINE"
POD_NAME_ENV = "POD_NAME"
_PATH_SUFFIX = "_EXPORT_PATH"
_ARCHIVE_SUFFIX = "_EXPORT_ARCHIVE_URI"
_DIR_SUFFIX = "_EXPORT_DIR_URI"
_RAW_SUFFIX = "_EXPORT_RAW_URI"
_RAW_GZIP_SUFFIX = "_EXPORT_RAW_GZIP_URI"


# The VM's manifests: a ConfigMap the controller writes and mounts into the exporter pod at
# MANIFEST_MOUNT_PATH, one file per key (KubeVirt's createDataManifestConfigMap).
MANIFEST_MOUNT_PATH = "/manifest_data"
VM_MANIFEST_KEY = "virtualmachine-manifest"
EXPORT_NAME_KEY = "export-name"
INTERNAL_HOST_KEY = "internal_host"
EXTERNAL_HOST_KEY = "external_host"
INTERNAL_CA_KEY = "internal_ca_cm"
EXTERNAL_CA_KEY = "external_ca_cm"
DATA_VOLUME_KEY_PREFIX = "dv-"  # then the DataVolume's name


def raw_uri(claim_name: str) -> str:
    return f"{URL_BASE_PATH}/{claim_name}/disk.img"


def raw_gzip_uri(claim_name: str) -> str:
    return f"{URL_BASE_PATH}/{claim_name}/disk.img.gz"


def archive_uri(claim_name: str) -> str:
    return f"{URL_BASE_PATH}/{claim_name}/disk.tar.gz"


def dir_uri(claim_name: str) -> str:
    return f"{URL_BASE_PATH}/{claim_name}/dir/"


def pod_volume_name(claim_name: str) -> str:
    """The exporter pod's volume (and mount directory) for a claim: dots are not allowed in either."""
    name = claim_name.replace(".", "-")
    if len(name) <= LABEL_MAX:
        return name
    return bounded_name(EXPORT_PREFIX, name, LABEL_MAX)


def mount_path(claim_name: str, *, block: bool) -> str:
    """Where the exporter pod sees a claim: a device node for a block claim, a directory otherwise."""
    return f"{BLOCK_MOUNT_PATH if block else FILESYSTEM_MOUNT_PATH}/{pod_volume_name(claim_name)}"


def volume_env(index: int, mount_path: str, claim_name: str, *, raw: bool) -> dict[str, str]:
    """The environment that tells the exporter to serve one claim.

    ``raw`` is for disk images (block claims, and filesystem claims with KubeVirt content): they are served
    as ``disk.img`` and ``disk.img.gz``; any other filesystem claim is served as a directory and a tarball.
    """
    prefix = f"VOLUME{index}"
    env = {prefix + _PATH_SUFFIX: mount_path}
    if raw:
        env[prefix + _RAW_SUFFIX] = raw_uri(claim_name)
        env[prefix + _RAW_GZIP_SUFFIX] = raw_gzip_uri(claim_name)
    else:
        env[prefix + _ARCHIVE_SUFFIX] = archive_uri(claim_name)
        env[prefix + _DIR_SUFFIX] = dir_uri(claim_name)
    return env


@dataclass(frozen=True)
class VolumeInfo:
    """One served volume: where it is mounted and the URIs it answers on ("" when not served that way)."""

    path: str
    archive_uri: str = ""
    dir_uri: str = ""
    raw_uri: str = ""
    raw_gzip_uri: str = ""


@dataclass(frozen=True)
class ServerPaths:
    vm_uri: str
    secret_uri: str
    volumes: tuple[VolumeInfo, ...]

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ServerPaths:
        volumes = []
        for key, path in sorted(env.items()):
            if not key.endswith(_PATH_SUFFIX):
                continue
            prefix = key.removesuffix(_PATH_SUFFIX)
            volumes.append(
                VolumeInfo(
                    path=path,
                    archive_uri=env.get(prefix + _ARCHIVE_SUFFIX, ""),
                    dir_uri=env.get(prefix + _DIR_SUFFIX, ""),
                    raw_uri=env.get(prefix + _RAW_SUFFIX, ""),
                    raw_gzip_uri=env.get(prefix + _RAW_GZIP_SUFFIX, ""),
                )
            )
        return cls(
            vm_uri=env.get(VM_DEFINITION_ENV, ""),
            secret_uri=env.get(SECRET_DEFINITION_ENV, ""),
            volumes=tuple(volumes),
        )

    def volume_info(self, claim_name: str) -> VolumeInfo | None:
        """The served volume of a claim: its mount directory is named after the claim's pod volume."""
        target = pod_volume_name(claim_name)
        for volume in self.volumes:
            if PurePosixPath(volume.path).name == target:
                return volume
        return None
