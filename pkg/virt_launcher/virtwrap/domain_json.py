"""The launcher's view of its domain as JSON, the payload of GetDomain and of Notify's domain events.

It is KubeVirt's Go ``api.Domain`` as ``encoding/json`` writes it. That struct and everything in it
carry no json tags, so the keys are Go field names and nothing is omitted: ``kind``/``apiVersion``
(from the embedded ``TypeMeta``), ``ObjectMeta`` (name and namespace split from the domain name; the
VMI UID only on events, as KubeVirt's notifier sets it; ``deletionTimestamp`` once the domain is
gone), ``Spec`` (the domain model read from libvirt's XML, see :meth:`XMLElement.to_json_dict`) and
``Status`` (``Status``/``Reason`` as in :mod:`.states`, and what the guest agent reported: its
``Interfaces``, ``OSInfo`` and ``FSFreezeStatus``, see :meth:`.agent.AgentStore.domain_status_fields`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubevirt.virt_launcher.virtwrap import api, states
from kubevirt.virt_launcher.virtwrap.timestamps import json_time

# What KubeVirt's NewDomainReferenceFromName puts into the TypeMeta of every domain it sends.
DOMAIN_KIND = "Domain"
DOMAIN_API_VERSION = "1.2.2"

_GUEST_OS_INFO_FIELDS = (
    "Name",
    "KernelRelease",
    "Version",
    "PrettyName",
    "VersionId",
    "KernelVersion",
    "Machine",
    "Id",
)


def split_domain_name(domain_name: str) -> tuple[str, str]:
    """``<namespace>_<name>`` back into (namespace, name); a name without ``_`` is in ``default``."""
    namespace, sep, name = domain_name.partition("_")
    return (namespace, name) if sep else ("default", domain_name)


def metadata_from_domain_xml(xml: str) -> api.KubeVirtMetadata:
    """KubeVirt's metadata in a domain libvirt returned (empty when it has none)."""
    return api.Domain.from_xml(xml).metadata.kubevirt


# The parts of DomainStatus a guest agent reports.
GUEST_STATUS_FIELDS = ("Interfaces", "OSInfo", "FSFreezeStatus")


def domain_status(status: str, reason: str, guest: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``DomainStatus``. Without a guest agent's report: no interfaces (``null``), an empty
    ``GuestOSInfo``, no freeze status; ``guest`` replaces those it names. No VNC session."""
    result: dict[str, Any] = {
        "Status": status,
        "Reason": reason,
        "Interfaces": None,
        "OSInfo": dict.fromkeys(_GUEST_OS_INFO_FIELDS, ""),
        "FSFreezeStatus": {"Status": ""},
        "ServiceStatus": {"VNCSessionConnected": 0},
    }
    for field in GUEST_STATUS_FIELDS:
        if guest is not None and field in guest:
            result[field] = guest[field]
    return result


def build_domain_json(
    *,
    domain_name: str,
    spec: dict[str, Any],
    status: dict[str, Any],
    uid: str = "",
    deleted_at: datetime | None = None,
) -> dict[str, Any]:
    """The whole ``Domain`` object around an already serialised ``Spec`` and ``Status``."""
    namespace, name = split_domain_name(domain_name)
    object_meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        object_meta["uid"] = uid
    object_meta["creationTimestamp"] = None  # metav1.Time's zero value marshals as null
    if deleted_at is not None:
        object_meta["deletionTimestamp"] = json_time(deleted_at)
    return {
        "kind": DOMAIN_KIND,
        "apiVersion": DOMAIN_API_VERSION,
        "ObjectMeta": object_meta,
        "Spec": spec,
        "Status": status,
    }


def live_domain_json(
    xml: str,
    state: int,
    reason: int,
    *,
    for_event: bool = False,
    guest: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A domain libvirt knows: its XML read into the model, with libvirt's state and reason, and the
    guest agent's part of the status (``guest``). KubeVirt's notifier names the VMI UID in
    ``ObjectMeta`` of the events it sends; GetDomain leaves it out."""
    spec = api.Domain.from_xml(xml)
    return build_domain_json(
        domain_name=spec.name or "",
        spec=spec.to_json_dict(),
        status=domain_status(states.state_name(state), states.reason_name(state, reason), guest),
        uid=(spec.metadata.kubevirt.uid or "") if for_event else "",
    )


def domain_uid(domain: dict[str, Any]) -> str:
    """The VMI UID a domain JSON carries in its KubeVirt metadata."""
    uid: str = domain["Spec"]["Metadata"]["KubeVirt"]["UID"]
    return uid


def gone_domain_json(domain_name: str, uid: str, deleted_at: datetime) -> dict[str, Any]:
    """The final notification for a domain that no longer exists: a spec holding only the VMI UID."""
    spec = api.Domain(metadata=api.Metadata(kubevirt=api.KubeVirtMetadata(uid=uid))).to_json_dict()
    spec["XMLName"] = {"Space": "", "Local": ""}  # never read from XML
    return build_domain_json(
        domain_name=domain_name,
        spec=spec,
        status=domain_status(states.NO_STATE, states.REASON_NON_EXISTENT),
        uid=uid,
        deleted_at=deleted_at,
    )
