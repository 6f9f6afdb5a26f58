"""Which of an export's links a download uses, as KubeVirt's virtctl picks them.

The external links by default; the internal ones when a service URL is given (or a port-forward made
one), with that URL's host put in place of the service's. Of a volume's formats the gzip ones (raw image
or archive) are preferred, a raw image is taken when there is nothing else; ``--format raw`` then
decompresses, unless the format looked at last was raw already.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from kubevirt.client import JSON
from kubevirt.virtctl.vmexport.exports import link_side, links
from kubevirt.virtctl.vmexport.flags import VMExportError, VMExportInfo
from kubevirt_api.export.v1beta1.types import FORMAT_ARCHIVE_GZ, FORMAT_GZIP, FORMAT_RAW

_COMPRESSED = (FORMAT_GZIP, FORMAT_ARCHIVE_GZ)


def _where(export: JSON) -> str:
    metadata = export.get("metadata") or {}
    return f"'{metadata.get('namespace', '')}/{metadata.get('name', '')}' VirtualMachineExport"


def with_service_host(url: str, service_url: str) -> str:
    """``url`` with its host replaced by ``service_url`` (unchanged without one)."""
    if not service_url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError as err:
        raise VMExportError(f'parse "{url}": {err}') from None
    user, at, _ = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user}{at}{service_url}"))


def link_cert(export: JSON, info: VMExportInfo) -> str:
    """The CA that the side of links in use is served under."""
    return str((links(export).get(link_side(info)) or {}).get("cert") or "")


def volume_url(export: JSON, info: VMExportInfo) -> tuple[str, bool]:
    """The URL to download, and whether to decompress what it serves."""
    available = links(export)
    link: JSON | None = None
    if not info.service_url and available.get("external") is not None:
        link = available["external"]
    elif available.get("internal") is not None:
        link = available["internal"]
    volumes = (link or {}).get("volumes") or []
    if not volumes:
        raise VMExportError(f"unable to access the volume info from {_where(export)}")
    if len(volumes) > 1 and not info.volume_name:
        raise VMExportError(
            f"detected more than one downloadable volume in {_where(export)}: "
            "Select the expected volume using the --volume flag"
        )
    url, last_format = "", ""
    for volume in volumes:
        if len(volumes) != 1 and volume.get("name") != info.volume_name:
            continue
        for entry in volume.get("formats") or []:
            last_format = entry.get("format", "")
            if last_format in (*_COMPRESSED, FORMAT_RAW):
                url = with_service_host(entry.get("url", ""), info.service_url)
            if last_format in _COMPRESSED:
                break
    decompress = info.decompress and last_format != FORMAT_RAW
    if not url:
        raise VMExportError(f"unable to get a valid URL from {_where(export)}")
    return url, decompress


def manifest_urls(export: JSON, info: VMExportInfo) -> dict[str, str]:
    """The manifest URLs by type (``all``, ``auth-header-secret``)."""
    link = links(export).get(link_side(info))
    manifests = (link or {}).get("manifests") or []
    if not manifests:
        raise VMExportError(f"unable to access the manifest info from {_where(export)}")
    return {m.get("type", ""): with_service_host(m.get("url", ""), info.service_url) for m in manifests}
