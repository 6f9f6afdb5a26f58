"""``--datasource``: a DataSource of the volume's name pointing at it, created, or relabelled and
repointed with a JSON patch when one exists already."""

from __future__ import annotations

from kubevirt.client import KubeApi, NotFoundError
from kubevirt.client.resources import DATA_SOURCES
from kubevirt.virtctl.imageupload.flags import UploadInfo
from kubevirt.virtctl.imageupload.objects import data_source_body, data_source_patch
from kubevirt.virtctl.vmexport.printer import Printer


def point_data_source(api: KubeApi, info: UploadInfo, printer: Printer) -> None:
    try:
        existing = api.get(DATA_SOURCES, info.namespace, info.name)
    except NotFoundError:
        api.create(DATA_SOURCES, info.namespace, data_source_body(info))
        printer.say(f"Created a new DataSource {info.namespace}/{info.name}\n")
        return
    metadata = existing.get("metadata") or {}
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    api.patch(DATA_SOURCES, namespace, name, data_source_patch(info, existing), patch_type="json")
    printer.say(f"Updated an existing DataSource {namespace}/{name}\n")
