"""VMI spec rules about volumes, their disks and access credentials."""

from __future__ import annotations

import base64
import binascii
import posixpath
from dataclasses import dataclass

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import has, items, obj, opt_obj, text
from kubevirt.admission.quantity import parse_or_zero
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

CLOUD_INIT_USER_MAX_LEN = 2048
CLOUD_INIT_NETWORK_MAX_LEN = 2048
# Every volume source, in KubeVirt's counting order.
SOURCES = (
    "persistentVolumeClaim",
    "sysprep",
    "cloudInitNoCloud",
    "cloudInitConfigDrive",
    "containerDisk",
    "ephemeral",
    "emptyDisk",
    "hostDisk",
    "dataVolume",
    "configMap",
    "secret",
    "downwardAPI",
    "serviceAccount",
    "downwardMetrics",
    "memoryDump",
)


def _decode_base64(value: str) -> bytes | None:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


@dataclass(frozen=True)
class _DataKind:
    """User data or network data: their keys and the words KubeVirt's messages use for them."""

    prefix: str  # "user" or "network"
    secret_key: str  # the Secret reference's JSON key (user data's is "secretRef", not "userDataSecretRef")
    max_len: int
    too_many: str
    too_long: str


_USER_DATA = _DataKind(
    "user", "secretRef", CLOUD_INIT_USER_MAX_LEN, "must have only one userdatasource set.", "userdata"
)
_NETWORK_DATA = _DataKind(
    "network",
    "networkDataSecretRef",
    CLOUD_INIT_NETWORK_MAX_LEN,
    "must have only one networkdata source set.",
    "networkdata",
)


def _cloud_init_data(where: Path, kind: str, source: JSON, data: _DataKind) -> tuple[int, list[StatusCause]]:
    """How many sources of this data the volume sets, and the causes about them."""
    out: list[StatusCause] = []
    here = where.child(kind)
    sources = length = 0
    if text(obj(source, data.secret_key), "name"):
        sources += 1
    encoded = text(source, f"{data.prefix}DataBase64")
    if encoded:
        sources += 1
        decoded = _decode_base64(encoded)
        if decoded is None:
            bad = where.child(kind, f"{data.prefix}DataBase64")
            out.append(c.invalid(bad, f"{bad}.{kind}.{data.prefix}DataBase64 is not a valid base64 value."))
            decoded = b""
        length = len(decoded)
    plain = text(source, f"{data.prefix}Data")
    if plain:
        sources += 1
        length = len(plain.encode())
    if sources > 1:
        out.append(c.invalid(here, f"{here} {data.too_many}"))
    if length > data.max_len:
        secret_ref = f"{data.prefix.capitalize()}DataSecretRef"
        message = f"{here} {data.too_long} exceeds {data.max_len} byte limit."
        out.append(c.invalid(here, f"{message} Should use {secret_ref} for larger data."))
    return sources, out


def _cloud_init(where: Path, kind: str, source: JSON) -> list[StatusCause]:
    user_sources, out = _cloud_init_data(where, kind, source, _USER_DATA)
    network_sources, network_causes = _cloud_init_data(where, kind, source, _NETWORK_DATA)
    out.extend(network_causes)
    if user_sources == 0 and network_sources == 0:
        here = where.child(kind)
        out.append(
            c.invalid(here, f"{here} must have at least one userdatasource or one networkdatasource set.")
        )
    return out


def _host_disk(where: Path, host_disk: JSON, config: ClusterConfig) -> list[StatusCause]:
    out: list[StatusCause] = []
    if not config.enabled("HostDisk"):
        out.append(c.invalid(where, "HostDisk feature gate is not enabled"))
    if not text(host_disk, "path"):
        path = where.child("hostDisk", "path")
        out.append(c.not_found(path, f"{path} is required for hostDisk volume"))
    kind = text(host_disk, "type")
    type_field = where.child("hostDisk", "type")
    if kind not in ("Disk", "DiskOrCreate"):
        message = f"{type_field} has invalid value '{kind}', allowed are 'Disk' or 'DiskOrCreate'"
        out.append(c.invalid(type_field, message))
    if kind == "Disk" and not parse_or_zero(host_disk.get("capacity")).is_zero():
        capacity = where.child("hostDisk", "capacity")
        out.append(
            c.invalid(
                capacity, f"{capacity} is allowed to pass only with {type_field} equal to 'DiskOrCreate'"
            )
        )
    return out


def _required(where: Path) -> StatusCause:
    return c.invalid(where, f"{where} is a required field")


def volumes(field: Path, volume_list: list[JSON], config: ClusterConfig) -> list[StatusCause]:
    """``validateVolumes``; ``field`` is the volumes path."""
    out: list[StatusCause] = []
    first_index: dict[str, int] = {}
    counts = {"serviceAccount": 0, "downwardMetrics": 0, "memoryDump": 0}
    for i, volume in enumerate(volume_list):
        where = field.index(i)
        name = text(volume, "name")
        if name in first_index:
            out.append(
                c.invalid(
                    where.child("name"),
                    f"{where} and {field.index(first_index[name])} must not have the same Name.",
                )
            )
        else:
            first_index[name] = i
        if has(volume, "dataVolume") and not text(obj(volume, "dataVolume"), "name"):
            out.append(c.required(where.child("name"), "DataVolume 'name' must be set"))
        for kind in counts:
            if has(volume, kind):
                counts[kind] += 1
        if sum(1 for source in SOURCES if has(volume, source)) != 1:
            out.append(c.invalid(where, f"{where} must have exactly one source type set"))
        for kind in ("cloudInitNoCloud", "cloudInitConfigDrive"):
            source = opt_obj(volume, kind)
            if source is not None:
                out.extend(_cloud_init(where, kind, source))
                break
        if has(volume, "downwardMetrics") and not config.enabled("DownwardMetrics"):
            message = "downwardMetrics disks are not allowed: DownwardMetrics feature gate is not enabled."
            out.append(c.invalid(where, message))
        host_disk = opt_obj(volume, "hostDisk")
        if host_disk is not None:
            out.extend(_host_disk(where, host_disk, config))
        if has(volume, "configMap") and not text(obj(volume, "configMap"), "name"):
            out.append(_required(where.child("configMap", "name")))
        if has(volume, "secret") and not text(obj(volume, "secret"), "secretName"):
            out.append(_required(where.child("secret", "secretName")))
        if has(volume, "serviceAccount") and not text(obj(volume, "serviceAccount"), "serviceAccountName"):
            out.append(_required(where.child("serviceAccount", "serviceAccountName")))
    for kind, what in (
        ("serviceAccount", "serviceAccount"),
        ("downwardMetrics", "downwardMetric"),
        ("memoryDump", "memory dump"),
    ):
        if counts[kind] > 1:
            out.append(c.invalid(field, f"{field} must have max one {what} volume set"))
    return out


def validate_path(where: Path, path: str) -> list[StatusCause]:
    """An absolute path to a file, without ``..`` or ``.`` components, and not ``/``."""
    if path == "/":
        return [c.invalid(where, f"{where} must not point to root")]
    cleaned = posixpath.normpath(posixpath.join("/", path))
    if cleaned.startswith("//"):
        cleaned = cleaned[1:]
    if cleaned != path.rstrip("/"):
        return [c.invalid(where, f"{where} must be an absolute path to a file without relative components")]
    return []


def container_disks(field: Path, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    for i, volume in enumerate(items(spec, "volumes")):
        path = text(obj(volume, "containerDisk"), "path")
        if path:
            out.extend(validate_path(field.child("volumes").index(i).child("containerDisk"), path))
    return out


def volume_disks(field: Path, spec: JSON) -> list[StatusCause]:
    """``validateVirtualMachineInstanceSpecVolumeDisks``: every volume is used by a disk or filesystem."""
    devices = obj(obj(spec, "domain"), "devices")
    used = {text(d, "name") for d in items(devices, "disks")} | {
        text(f, "name") for f in items(devices, "filesystems")
    }
    out: list[StatusCause] = []
    for i, volume in enumerate(items(spec, "volumes")):
        if has(volume, "memoryDump"):
            continue
        name = text(volume, "name")
        if name not in used:
            # KubeVirt's own (odd) path: spec.domain.volumes[i].name.
            where = field.child("domain", "volumes").index(i).child("name")
            out.append(c.invalid(where, f"{where} '{name}' not found."))
    return out


def access_credentials(field: Path, spec: JSON) -> list[StatusCause]:
    volume_list = items(spec, "volumes")
    has_no_cloud = any(has(v, "cloudInitNoCloud") for v in volume_list)
    has_config_drive = any(has(v, "cloudInitConfigDrive") for v in volume_list)
    out: list[StatusCause] = []
    for i, credential in enumerate(items(spec, "accessCredentials")):
        where = field.index(i)
        count = 0
        ssh = opt_obj(credential, "sshPublicKey")
        if ssh is not None:
            count += 1
            methods = obj(ssh, "propagationMethod")
            method_count = 0
            if has(methods, "noCloud"):
                method_count += 1
                if not has_no_cloud:
                    out.append(
                        c.invalid(
                            where.child("sshPublicKey", "propagationMethod"),
                            f"{where} requires a noCloud volume to exist "
                            "when the noCloud propagationMethod is in use.",
                        )
                    )
            if has(methods, "configDrive"):
                method_count += 1
                if not has_config_drive:
                    out.append(
                        c.invalid(
                            where.child("sshPublicKey", "propagationMethod"),
                            f"{where} requires a configDrive volume to exist "
                            "when the configDrive propagationMethod is in use.",
                        )
                    )
            agent = opt_obj(methods, "qemuGuestAgent")
            if agent is not None:
                if not items(agent, "users") and not agent.get("users"):
                    out.append(
                        c.invalid(
                            where.child("sshPublicKey", "propagationMethod", "qemuGuestAgent", "users"),
                            f"{where} requires at least one user to be present in the users list",
                        )
                    )
                method_count += 1
            if not has(obj(ssh, "source"), "secret"):
                out.append(
                    c.invalid(
                        where.child("sshPublicKey", "source"), f"{where} must have exactly one source set"
                    )
                )
            if method_count != 1:
                out.append(
                    c.invalid(
                        where.child("sshPublicKey", "propagationMethod"),
                        f"{where} must have exactly one propagationMethod set",
                    )
                )
        password = opt_obj(credential, "userPassword")
        if password is not None:
            count += 1
            if not has(obj(password, "source"), "secret"):
                out.append(
                    c.invalid(
                        where.child("userPassword", "source"), f"{where} must have exactly one source set"
                    )
                )
            if not has(obj(password, "propagationMethod"), "qemuGuestAgent"):
                out.append(
                    c.invalid(
                        where.child("userPassword", "propagationMethod"),
                        f"{where} must have exactly one propagationMethod set",
                    )
                )
        if count != 1:
            out.append(c.invalid(where, f"{where} must have exactly one access credential type set"))
    return out


def filesystems(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    devices = obj(obj(spec, "domain"), "devices")
    if devices.get("filesystems") is None:
        return []
    by_name = {text(v, "name"): v for v in items(spec, "volumes")}
    old_gate = config.enabled("ExperimentalVirtiofsSupport")
    out: list[StatusCause] = []
    where = field.child("domain", "devices", "filesystems")
    for fs in items(devices, "filesystems"):
        volume = by_name.get(text(fs, "name"))
        if volume is None:
            continue
        is_config = any(has(volume, k) for k in ("configMap", "secret", "serviceAccount", "downwardAPI"))
        is_storage = any(has(volume, k) for k in ("persistentVolumeClaim", "dataVolume"))
        if is_config and not config.enabled("EnableVirtioFsConfigVolumes") and not old_gate:
            out.append(
                c.invalid(
                    where, "virtiofs is not allowed: virtiofs feature gate is not enabled for config volumes"
                )
            )
        elif is_storage and not config.enabled("EnableVirtioFsStorageVolumes") and not old_gate:
            out.append(
                c.invalid(where, "virtiofs is not allowed: virtiofs feature gate is not enabled for PVC")
            )
    return out
