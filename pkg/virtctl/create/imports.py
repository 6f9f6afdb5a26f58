"""``virtctl create vm --volume-import type:<source>,...``: a DataVolumeTemplate per imported volume.

Each source type takes its own params (KubeVirt's names) and checks what it requires; ``size`` is
optional only for the sources that clone an existing volume (pvc, snapshot, ds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from kubevirt.virtctl.create.params import FlagError, flag_error, parse_params, split_prefixed_name
from kubevirt_api.resource import Quantity, QuantityError
from kubevirt_api.view import JSON

__all__ = ["FLAG", "ImportedVolume", "imported_volume"]

FLAG: Final = "volume-import"

_COMMON: Final = ("size", "type", "name", "bootorder")
_SIZE_OPTIONAL: Final = frozenset({"pvc", "snapshot", "ds"})


@dataclass(frozen=True)
class ImportedVolume:
    name: str | None  # None: a generated "imported-volume-<random>"
    spec: JSON  # the DataVolumeTemplate's spec, without storage
    size: str | None
    boot_order: int | None


def _required(params: dict[str, str], message: str, *keys: str) -> None:
    if any(not params.get(key) for key in keys):
        raise flag_error(FLAG, message)


def _blank(params: dict[str, str]) -> JSON:
    return {"source": {"blank": {}}}


def _gcs(params: dict[str, str]) -> JSON:
    _required(params, "url is required with gcs volume source", "url")
    return {"source": {"gcs": _present(params, url="url", secretRef="secretref")}}


def _http(params: dict[str, str]) -> JSON:
    _required(params, "url is required with http volume source", "url")
    source = _present(params, url="url", secretRef="secretref", certConfigMap="certconfigmap")
    for key, param in (("extraHeaders", "extraheaders"), ("secretExtraHeaders", "secretextraheaders")):
        if param in params:
            source[key] = params[param].split(";")
    return {"source": {"http": source}}


def _imageio(params: dict[str, str]) -> JSON:
    _required(params, "url and diskid are both required with imageio volume source", "url", "diskid")
    fields = _present(
        params, url="url", diskId="diskid", secretRef="secretref", certConfigMap="certconfigmap"
    )
    return {"source": {"imageio": fields}}


def _registry(params: dict[str, str]) -> JSON:
    method = params.get("pullmethod", "")
    if method and method not in ("pod", "node"):
        raise flag_error(FLAG, "pullmethod must be set to pod or node")
    if bool(params.get("url")) == bool(params.get("imagestream")):
        raise flag_error(FLAG, "exactly one of url or imagestream must be defined")
    source = _present(
        params,
        pullMethod="pullmethod",
        certConfigMap="certconfigmap",
        imageStream="imagestream",
        url="url",
        secretRef="secretref",
    )
    return {"source": {"registry": source}}


def _s3(params: dict[str, str]) -> JSON:
    _required(params, "url is required with s3 volume source", "url")
    return {
        "source": {"s3": _present(params, url="url", certConfigMap="certconfigmap", secretRef="secretref")}
    }


def _vddk(params: dict[str, str]) -> JSON:
    for key in ("url", "uuid", "thumbprint", "secretref", "backingfile"):
        _required(params, f"{key} is required with vddk volume source", key)
    source = _present(
        params,
        url="url",
        uuid="uuid",
        thumbprint="thumbprint",
        secretRef="secretref",
        initImageURL="initimageurl",
        backingFile="backingfile",
    )
    return {"source": {"vddk": source}}


def _namespaced_source(params: dict[str, str], kind: str) -> tuple[str, str]:
    _required(params, "src must be specified", "src")
    namespace, name = _split(params["src"])
    if not namespace:
        raise flag_error(FLAG, f'namespace of {kind} "{name}" must be specified')
    return namespace, name


def _pvc(params: dict[str, str]) -> JSON:
    namespace, name = _namespaced_source(params, "pvc")
    return {"source": {"pvc": {"name": name, "namespace": namespace}}}


def _snapshot(params: dict[str, str]) -> JSON:
    namespace, name = _namespaced_source(params, "snapshot")
    return {"source": {"snapshot": {"name": name, "namespace": namespace}}}


def _data_source(params: dict[str, str]) -> JSON:
    _required(params, "src must be specified", "src")
    namespace, name = _split(params["src"])
    ref: JSON = {"kind": "DataSource", "name": name}
    if namespace:
        ref["namespace"] = namespace
    return {"sourceRef": ref}


def _split(value: str) -> tuple[str, str]:
    try:
        return split_prefixed_name(FLAG, value)
    except FlagError as err:  # KubeVirt wraps the reason: "src invalid: <reason>"
        reason = err.message.split(": ", 1)[-1]
        raise flag_error(FLAG, f"src invalid: {reason}") from None


def _present(params: dict[str, str], **fields: str) -> JSON:
    """The DataVolume source fields whose params were given (``field=param``)."""
    return {field: params[param] for field, param in fields.items() if params.get(param)}


_SOURCES: Final[dict[str, tuple[Callable[[dict[str, str]], JSON], tuple[str, ...]]]] = {
    "blank": (_blank, ()),
    "gcs": (_gcs, ("secretref", "url")),
    "http": (_http, ("certconfigmap", "extraheaders", "secretextraheaders", "secretref", "url")),
    "imageio": (_imageio, ("certconfigmap", "diskid", "secretref", "url")),
    "pvc": (_pvc, ("src",)),
    "registry": (_registry, ("certconfigmap", "imagestream", "pullmethod", "secretref", "url")),
    "s3": (_s3, ("certconfigmap", "secretref", "url")),
    "vddk": (_vddk, ("backingfile", "initimageurl", "secretref", "thumbprint", "url", "uuid")),
    "snapshot": (_snapshot, ("src",)),
    "ds": (_data_source, ("src",)),
}


def imported_volume(value: str) -> ImportedVolume:
    """One ``--volume-import`` value; raises the flag's error when it is wrong."""
    if not value:
        raise flag_error(FLAG, "params may not be empty")
    source_type = _param(value, "type")
    if source_type not in _SOURCES:
        raise flag_error(FLAG, f'invalid volume import type "{source_type}", see help for supported values')
    build, own = _SOURCES[source_type]
    params = parse_params(FLAG, value, (*own, *_COMMON))
    order = _uint(params, "bootorder")
    size = params.get("size")
    if size is not None:
        try:
            Quantity(size)
        except QuantityError as err:
            raise flag_error(FLAG, f'failed to parse param "size": {err}') from None
    spec = build(params)
    if size is None and source_type not in _SIZE_OPTIONAL:
        raise flag_error(FLAG, "size must be specified")
    return ImportedVolume(params.get("name"), spec, size, order)


def _param(value: str, name: str) -> str:
    for param in value.split(","):
        key, colon, rest = param.partition(":")
        if not colon:
            raise flag_error(FLAG, f"params need to have at least one colon: {param}")
        if key == name:
            return rest
    raise flag_error(FLAG, f"{name} must be specified")


def _uint(params: dict[str, str], name: str) -> int | None:
    text = params.get(name)
    if text is None:
        return None
    if not text.isdigit() or int(text) >= 2**32:
        raise flag_error(
            FLAG, f'failed to parse param "{name}": strconv.ParseUint: parsing "{text}": invalid syntax'
        )
    return int(text)
