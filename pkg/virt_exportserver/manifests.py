"""The exported VM's manifests (``/manifests/all``) and the token Secret CDI imports with
(``/manifests/secret``), each under ``/internal`` and ``/external``, as KubeVirt writes them.

``/manifests/all`` lists the CA ConfigMap to trust the export by, the VM, and a DataVolume per claim no
template of the VM makes; the VM's DataVolume templates and those DataVolumes import over HTTPS from
this export's ``disk.img.gz`` URIs (reached through the internal or external host), with that CA and
the token Secret's header. ``Accept: application/yaml`` gets YAML documents each ended by ``---``;
anything else a ``v1`` ``List`` as indented JSON. Only GET is answered (400 otherwise).

KubeVirt decodes each object into its Go type and encodes it again; here they are passed on as the
controller wrote them, with ``kind`` and ``apiVersion`` set first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from kubevirt.client import gojson, goyaml
from kubevirt.export.paths import VolumeInfo
from kubevirt.export.token import TOKEN_HEADER
from kubevirt.log import get_logger
from kubevirt.virt_exportserver.httpcompat import TEXT_PLAIN, Target, go_join, status_only
from kubevirt.virt_exportserver.manifest_data import JSON, ManifestData
from kubevirt.virt_exportserver.mux import Handler

YAML_TYPE = "application/yaml"


class ManifestError(Exception):
    """The manifests cannot be produced; ``status`` is what KubeVirt answers then."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def header_secret_name(export_name: str) -> str:
    return f"header-secret-{export_name}"


def typed(obj: JSON, kind: str, api_version: str) -> JSON:
    """``obj`` with its type first, as Go writes an object's TypeMeta."""
    rest = {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}
    return {"kind": kind, "apiVersion": api_version, **rest}


def vm_resources(data: ManifestData, volumes: Sequence[VolumeInfo], *, internal: bool) -> list[JSON]:
    export_name = _read(data.export_name, "the export name")
    try:
        host = data.host(internal=internal)
    except FileNotFoundError:
        raise ManifestError(404, "this export has no such host") from None
    except OSError as err:
        raise ManifestError(500, f"cannot read the export's host: {err}") from None
    ca = typed(_read(lambda: data.ca_config_map(internal=internal), "the CA ConfigMap"), "ConfigMap", "v1")
    vm = typed(_read(data.virtual_machine, "the VM definition"), "VirtualMachine", "kubevirt.io/v1")
    source = _HttpSource(host, str((ca.get("metadata") or {}).get("name") or ""), export_name)
    for index, template in enumerate(_list(_path(vm, "spec", "dataVolumeTemplates"))):
        if index >= len(volumes):
            raise ManifestError(500, f"dataVolumeTemplates[{index}] has no exported volume")
        source.point(template, f"dataVolumeTemplates[{index}]", volumes[index].raw_gzip_uri)
    data_volumes = []
    for claim in _claims(vm):
        try:
            dv = data.data_volume(claim)
        except (OSError, ValueError) as err:
            raise ManifestError(500, f"cannot read the DataVolume of {claim}: {err}") from None
        if dv is None:
            continue
        dv = typed(dv, "DataVolume", "cdi.kubevirt.io/v1beta1")
        name = str((dv.get("metadata") or {}).get("name") or "")
        # KubeVirt matches a DataVolume to a volume by its name appearing in the URI; the last one wins.
        uris = [v.raw_gzip_uri for v in volumes if name in v.raw_gzip_uri]
        source.point(dv, f"DataVolume {name}", uris[-1] if uris else None)
        data_volumes.append(dv)
    return [ca, vm, *data_volumes]


def secret_resource(data: ManifestData, token: bytes) -> JSON:
    export_name = _read(data.export_name, "the export name")
    return {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": header_secret_name(export_name), "creationTimestamp": None},
        "stringData": {"token": f"{TOKEN_HEADER}:{token.decode('utf-8', 'replace')}"},
    }


class _HttpSource:
    """Points an object's HTTP import at one of this export's URIs."""

    def __init__(self, host: str, ca_name: str, export_name: str) -> None:
        self._host, self._ca_name, self._export_name = host, ca_name, export_name

    def point(self, obj: JSON, what: str, uri: str | None) -> None:
        http = _path(obj, "spec", "source", "http")
        if not isinstance(http, dict):
            raise ManifestError(500, f"{what}: spec.source.http is missing")
        if uri is not None:
            http["url"] = "https://" + go_join(self._host, uri)
        http["certConfigMap"] = self._ca_name
        http["secretExtraHeaders"] = [header_secret_name(self._export_name)]


def _claims(vm: JSON) -> list[str]:
    """The claims behind the VM's volumes (a DataVolume's or a PVC's name), in order."""
    names = []
    for volume in _list(_path(vm, "spec", "template", "spec", "volumes")):
        if not isinstance(volume, dict):
            continue
        if volume.get("dataVolume") is not None:
            name = _path(volume, "dataVolume", "name")
        else:
            name = _path(volume, "persistentVolumeClaim", "claimName")
        if isinstance(name, str) and name:
            names.append(name)
    return names


def _path(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _read(read: Callable[[], Any], what: str) -> Any:
    try:
        return read()
    except (OSError, ValueError) as err:
        raise ManifestError(500, f"cannot read {what}: {err}") from None


def encode(resources: list[JSON], *, as_yaml: bool) -> bytes:
    if as_yaml:
        return "".join(goyaml.dumps(resource) + "---\n" for resource in resources).encode()
    return gojson.dumps_indented({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": resources})


def vm_handler(data: ManifestData, volumes: Sequence[VolumeInfo], *, internal: bool) -> Handler:
    return _manifest_handler(lambda: vm_resources(data, volumes, internal=internal))


def secret_handler(data: ManifestData, token: Callable[[], bytes]) -> Handler:
    def resources() -> list[JSON]:
        try:
            value = token()
        except OSError as err:
            raise ManifestError(500, f"cannot read the token: {err}") from None
        return [secret_resource(data, value)]

    return _manifest_handler(resources)


def _manifest_handler(resources: Callable[[], list[JSON]]) -> Handler:
    async def handle(request: web.Request, _target: Target) -> web.StreamResponse:
        if request.method != "GET":
            return status_only(400)
        try:
            found = resources()
        except ManifestError as err:
            get_logger(path=request.path).error("cannot serve the manifests", reason=str(err))
            return status_only(err.status)
        body = encode(found, as_yaml=request.headers.get("Accept") == YAML_TYPE)
        return web.Response(body=body, headers={"Content-Type": TEXT_PLAIN})

    return handle
