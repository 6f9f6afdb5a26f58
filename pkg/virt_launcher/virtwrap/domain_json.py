"""The launcher's view of its domain as JSON, the payload of GetDomain and of Notify's domain events.

Shape (KubeVirt's ``Domain`` object): ``metadata`` (name, namespace, uid of the VMI, and a
``deletionTimestamp`` once the domain is gone), ``spec`` (the domain's name, uuid, type, the KubeVirt
metadata, and what virt-handler reports in the VMI status: machine type, memory, interfaces and disks, with
the XML's element and attribute names as keys) and ``status`` (``status``/``reason`` as in :mod:`.states`,
interfaces, OS info, freeze status).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lxml import etree

from kubevirt.virt_launcher.virtwrap import states
from kubevirt.virt_launcher.virtwrap.metadata import KUBEVIRT_NS, KubeVirtMetadata, json_time


def split_domain_name(domain_name: str) -> tuple[str, str]:
    """``<namespace>_<name>`` back into (namespace, name); namespaces cannot contain ``_``."""
    namespace, sep, name = domain_name.partition("_")
    return (namespace, name) if sep else ("", domain_name)


def metadata_from_domain_xml(xml: str) -> KubeVirtMetadata | None:
    root = etree.fromstring(xml.encode())
    node = root.find(f"metadata/{{{KUBEVIRT_NS}}}kubevirt")
    if node is None:
        return None
    return KubeVirtMetadata.from_xml(etree.tostring(node, encoding="unicode"))


def spec_from_domain_xml(root: etree._Element) -> dict[str, Any]:
    """The parts of the live domain virt-handler reads into the VMI status."""
    spec: dict[str, Any] = {}
    os_type = root.find("os/type")
    if os_type is not None:
        spec["os"] = {"type": {**dict(os_type.attrib), "os": (os_type.text or "").strip()}}
    for tag in ("memory", "currentMemory"):
        element = root.find(tag)
        if element is not None and (element.text or "").strip().isdigit():
            spec[tag] = {"value": int((element.text or "").strip()), "unit": element.get("unit", "KiB")}
    interfaces = [
        {
            "type": interface.get("type", ""),
            "mac": _attribute(interface, "mac", "address"),
            "alias": _attribute(interface, "alias", "name"),
            "model": _attribute(interface, "model", "type"),
            "target": _attribute(interface, "target", "dev"),
        }
        for interface in root.iterfind("devices/interface")
    ]
    disks = [
        {
            "device": disk.get("device", "disk"),
            "target": _attribute(disk, "target", "dev"),
            "bus": _attribute(disk, "target", "bus"),
            "alias": _attribute(disk, "alias", "name"),
            "source": _attribute(disk, "source", "file") or _attribute(disk, "source", "dev"),
        }
        for disk in root.iterfind("devices/disk")
    ]
    spec["devices"] = {"interfaces": interfaces, "disks": disks}
    return spec


def _attribute(parent: etree._Element, child: str, name: str) -> str:
    element = parent.find(child)
    return element.get(name, "") if element is not None else ""


def build_domain_json(
    *,
    domain_name: str,
    uuid: str,
    domain_type: str,
    status: str,
    reason: str,
    metadata: KubeVirtMetadata | None,
    deleted_at: datetime | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    namespace, name = split_domain_name(domain_name)
    object_meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if metadata is not None and metadata.uid:
        object_meta["uid"] = metadata.uid
    if deleted_at is not None:
        object_meta["deletionTimestamp"] = json_time(deleted_at)
    spec: dict[str, Any] = {"name": domain_name, "type": domain_type, **(details or {})}
    if uuid:
        spec["uuid"] = uuid
    if metadata is not None:
        spec["metadata"] = {"kubevirt": metadata.to_json()}
    return {
        "kind": "Domain",
        "apiVersion": "kubevirt.io/v1",
        "metadata": object_meta,
        "spec": spec,
        "status": {"status": status, "reason": reason, "interfaces": [], "osInfo": {}, "fsFreezeStatus": {}},
    }


def gone_domain_json(domain_name: str, uid: str, deleted_at: datetime) -> dict[str, Any]:
    """The final notification for a domain that no longer exists."""
    return build_domain_json(
        domain_name=domain_name,
        uuid="",
        domain_type="",
        status=states.NO_STATE,
        reason=states.REASON_NON_EXISTENT,
        metadata=KubeVirtMetadata(uid=uid),
        deleted_at=deleted_at,
    )
