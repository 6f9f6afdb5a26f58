"""cloud-init's NoCloud and ConfigDrive data sources, as the ISO images KubeVirt gives a guest.

The user and network data come inline, base64-encoded, or from a Secret the launcher pod mounts at
``<secret dir>/<volume>/{userdata,userData,networkdata,networkData}``; SSH keys propagated through the
data source come from ``<secret dir>/<secret>-access-cred/``. The metadata is KubeVirt's: NoCloud's
``meta-data`` is JSON with ``instance-id`` (the firmware UUID) and ``local-hostname``; ConfigDrive's
``openstack/latest/meta_data.json`` has ``instance_id`` ``<name>.<namespace>``, ``uuid`` and ``hostname``.
Every input is read and checked before anything is written; a bad one names its VMI field.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubevirt import safepath
from kubevirt.isoimage import write_iso

NO_CLOUD = "noCloud"
CONFIG_DRIVE = "configDrive"
NO_CLOUD_ISO = "noCloud.iso"
CONFIG_DRIVE_ISO = "configdrive.iso"
LABELS = {NO_CLOUD: "cidata", CONFIG_DRIVE: "config-2"}
# A Secret holds at most 1 MiB; more than that in a mounted key is not a Secret's data.
MAX_SECRET_DATA = 1024 * 1024
# Inline data is limited to 2048 bytes at admission (cloudInitUserMaxLen); the launcher accepts what a
# Secret could hold, not more, whatever reaches it.
MAX_INLINE_DATA = MAX_SECRET_DATA
MAX_HOSTNAME = 63
CLUSTER_INSTANCETYPE_ANNOTATION = "kubevirt.io/cluster-instancetype-name"
INSTANCETYPE_ANNOTATION = "kubevirt.io/instancetype-name"
_USER_DATA_KEYS = ("userdata", "userData")
_NETWORK_DATA_KEYS = ("networkdata", "networkData")


class CloudInitError(ValueError):
    """The cloud-init data cannot be read; the message starts with the VMI field at fault."""


@dataclasses.dataclass(frozen=True)
class CloudInitData:
    data_source: str
    volume_name: str
    user_data: bytes
    network_data: bytes
    meta_data: dict[str, Any]


def iso_path(base_dir: Path, data_source: str, name: str, namespace: str) -> Path:
    """Where the converter points the volume's disk: ``<base>/<namespace>/<name>/<iso>``."""
    iso = NO_CLOUD_ISO if data_source == NO_CLOUD else CONFIG_DRIVE_ISO
    return base_dir / namespace / name / iso


def read_volume_data(vmi: Mapping[str, Any], secret_dir: Path) -> CloudInitData | None:
    """The first cloud-init volume's data and metadata, or ``None`` when the VMI has none."""
    metadata = _object(vmi, "metadata", "metadata")
    spec = _object(vmi, "spec", "spec")
    volumes = spec.get("volumes") or []
    if not isinstance(volumes, list):
        raise CloudInitError("spec.volumes: must be a list")
    for index, volume in enumerate(volumes):
        if not isinstance(volume, Mapping):
            raise CloudInitError(f"spec.volumes[{index}]: must be an object")
        for key, data_source in (("cloudInitNoCloud", NO_CLOUD), ("cloudInitConfigDrive", CONFIG_DRIVE)):
            source = volume.get(key)
            if source is None:
                continue
            field = f"spec.volumes[{index}].{key}"
            name = str(volume.get("name", ""))
            if not safepath.plain_name(name):
                raise CloudInitError(f"spec.volumes[{index}].name: {name[:80]!r} is not a volume name")
            user, network = _read_source(source, field, secret_dir / name)
            if not user and not network:
                raise CloudInitError(
                    f"{field}: userDataBase64, userData, networkDataBase64 or networkData is required "
                    "for a cloud-init data source"
                )
            keys = _ssh_keys(spec.get("accessCredentials"), data_source, secret_dir)
            return CloudInitData(
                data_source=data_source,
                volume_name=name,
                user_data=user,
                network_data=network,
                meta_data=_meta_data(data_source, metadata, spec, keys),
            )
    return None


def write_iso_image(data: CloudInitData, path: Path) -> None:
    """The data source's image at ``path`` (replacing any earlier one in one rename)."""
    files: dict[str, bytes] = {}
    meta = json.dumps(data.meta_data, separators=(",", ":")).encode()
    if data.data_source == NO_CLOUD:
        files["meta-data"] = meta
        files["user-data"] = data.user_data
        if data.network_data:
            files["network-config"] = data.network_data
    else:
        files["openstack/latest/meta_data.json"] = meta
        files["openstack/latest/user_data"] = data.user_data
        if data.network_data:
            files["openstack/latest/network_data.json"] = data.network_data
    write_iso(path, LABELS[data.data_source], files)


# -- reading the data ------------------------------------------------------------------------------


def _read_source(source: Mapping[str, Any], field: str, secret_volume_dir: Path) -> tuple[bytes, bytes]:
    if not isinstance(source, Mapping):
        raise CloudInitError(f"{field}: must be an object")
    user = _inline_or_base64(source, field, "userData", "userDataBase64")
    network = _inline_or_base64(source, field, "networkData", "networkDataBase64")
    user_from_secret = source.get("secretRef") is not None
    network_from_secret = source.get("networkDataSecretRef") is not None
    if user_from_secret or network_from_secret:
        secret_user = _secret_key(secret_volume_dir, _USER_DATA_KEYS) if user_from_secret else None
        secret_network = _secret_key(secret_volume_dir, _NETWORK_DATA_KEYS) if network_from_secret else None
        if secret_user is None and secret_network is None:
            missing = "secretRef" if user_from_secret else "networkDataSecretRef"
            keys = _USER_DATA_KEYS if user_from_secret else _NETWORK_DATA_KEYS
            raise CloudInitError(
                f"{field}.{missing}: no cloud-init data-source found at volume: {secret_volume_dir.name} "
                f"(the secret has no key {' or '.join(keys)})"
            )
        user = secret_user or user
        network = secret_network or network
    return user, network


def _inline_or_base64(source: Mapping[str, Any], field: str, raw_key: str, b64_key: str) -> bytes:
    raw = source.get(raw_key)
    if raw:
        if not isinstance(raw, str):
            raise CloudInitError(f"{field}.{raw_key}: must be a string")
        data = raw.encode()
        _check_size(data, f"{field}.{raw_key}")
        return data
    encoded = source.get(b64_key)
    if not encoded:
        return b""
    if not isinstance(encoded, str):
        raise CloudInitError(f"{field}.{b64_key}: must be a string")
    if len(encoded) > MAX_INLINE_DATA * 4 // 3 + 4:
        raise CloudInitError(f"{field}.{b64_key}: more than the {MAX_INLINE_DATA} bytes allowed")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as err:
        raise CloudInitError(f"{field}.{b64_key}: not valid base64: {err}") from None
    _check_size(data, f"{field}.{b64_key}")
    return data


def _check_size(data: bytes, field: str) -> None:
    if len(data) > MAX_INLINE_DATA:
        raise CloudInitError(f"{field}: {len(data)} bytes, more than the {MAX_INLINE_DATA} allowed")


def _secret_key(volume_dir: Path, keys: Sequence[str]) -> bytes | None:
    """The first of ``keys`` the mounted secret has; ``None`` when it has none of them."""
    for key in keys:
        try:
            return safepath.read_file(volume_dir, key, limit=MAX_SECRET_DATA)
        except FileNotFoundError:
            continue
        except ValueError as err:
            raise CloudInitError(f"secret {volume_dir.name}/{key}: {err}") from None
        except OSError as err:
            raise CloudInitError(f"secret {volume_dir.name}/{key}: cannot be read: {err.strerror}") from None
    return None


def _ssh_keys(credentials: Any, data_source: str, secret_dir: Path) -> dict[str, str]:
    """Public keys of the access credentials propagated through this data source, numbered from 0."""
    if credentials is None:
        return {}
    if not isinstance(credentials, list):
        raise CloudInitError("spec.accessCredentials: must be a list")
    keys: dict[str, str] = {}
    for index, credential in enumerate(credentials):
        base = f"spec.accessCredentials[{index}]"
        if not isinstance(credential, Mapping):
            raise CloudInitError(f"{base}: must be an object")
        ssh = _object(credential, "sshPublicKey", f"{base}.sshPublicKey")
        methods = _object(ssh, "propagationMethod", f"{base}.sshPublicKey.propagationMethod")
        if methods.get(data_source) is None:
            continue
        secret = _object(
            _object(ssh, "source", f"{base}.sshPublicKey.source"),
            "secret",
            f"{base}.sshPublicKey.source.secret",
        )
        secret_name = secret.get("secretName") or ""
        if not secret_name:
            continue
        field = f"spec.accessCredentials[{index}].sshPublicKey.source.secret.secretName"
        directory_name = f"{secret_name}-access-cred"
        if not isinstance(secret_name, str) or not safepath.plain_name(directory_name):
            raise CloudInitError(f"{field}: {str(secret_name)[:80]!r} is not a secret name")
        directory = secret_dir / directory_name
        try:
            names = sorted(entry.name for entry in directory.iterdir())
        except OSError as err:
            raise CloudInitError(f"{field}: the secret is not mounted: {err.strerror}") from None
        for name in names:
            if name.startswith(".."):
                continue  # the kubelet's own entries (..data and its timestamped target)
            try:
                content = safepath.read_file(directory, name, limit=MAX_SECRET_DATA)
            except (OSError, ValueError):
                continue  # a directory, or not a key
            if content:
                keys[str(len(keys))] = content.decode(errors="replace")
    return keys


def _object(parent: Mapping[str, Any], key: str, field: str) -> Mapping[str, Any]:
    """``parent[key]`` when it is an object, ``{}`` when absent; anything else names its field."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CloudInitError(f"{field}: must be an object")
    return value


# -- the metadata ----------------------------------------------------------------------------------


def _meta_data(
    data_source: str, metadata: Mapping[str, Any], spec: Mapping[str, Any], keys: dict[str, str]
) -> dict[str, Any]:
    annotations = _object(metadata, "annotations", "metadata.annotations")
    instance_type = str(
        annotations.get(CLUSTER_INSTANCETYPE_ANNOTATION) or annotations.get(INSTANCETYPE_ANNOTATION) or ""
    )
    domain = _object(spec, "domain", "spec.domain")
    firmware = (
        _object(domain, "firmware", "spec.domain.firmware") if domain.get("firmware") is not None else None
    )
    # Without a firmware section KubeVirt makes up an instance ID.
    instance_uuid = str(firmware.get("uuid") or "") if firmware is not None else str(uuid.uuid4())
    name = str(metadata.get("name", ""))
    hostname = str(spec.get("hostname") or "") or name.split(".")[0][:MAX_HOSTNAME]
    out: dict[str, Any]
    if data_source == NO_CLOUD:
        out = {"instance-type": instance_type, "instance-id": instance_uuid, "local-hostname": hostname}
        out["public-keys"] = keys
    else:
        out = {
            "instance_type": instance_type,
            "instance_id": f"{name}.{metadata.get('namespace', '')}",
            "local_hostname": "",
            "hostname": hostname,
            "uuid": instance_uuid,
            "public_keys": keys,
        }
    # Go's omitempty: empty strings and maps are left out (instance-id/instance_id always stay).
    return {k: v for k, v in out.items() if v or k in ("instance-id", "instance_id")}
