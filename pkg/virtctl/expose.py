"""``virtctl expose``: a Service in front of a VMI, a VM or a VMI replica set, as KubeVirt v1.6 makes it.

The Service selects the launcher pods by ``vm.kubevirt.io/name`` (VMI, VM) or by the replica set's
``matchLabels``; its ports are ``--port`` or, without it, those the exposed object lists on its pod
network interface. Flag values are checked before anything is read from the cluster.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click

from kubevirt.client import (
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ApiError,
    KubeApi,
    Resource,
)
from kubevirt.client.resources import SERVICES
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt_api.core.v1.constants import VIRTUAL_MACHINE_NAME_LABEL

KINDS: dict[str, tuple[Resource, str]] = {
    **dict.fromkeys(("vmi", "vmis", "virtualmachineinstance", "virtualmachineinstances"),
                    (VIRTUAL_MACHINE_INSTANCES, "VirtualMachineInstance")),
    **dict.fromkeys(("vm", "vms", "virtualmachine", "virtualmachines"), (VIRTUAL_MACHINES, "VirtualMachine")),
    **dict.fromkeys(
        ("vmirs", "vmirss", "virtualmachineinstancereplicaset", "virtualmachineinstancereplicasets"),
        (VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, "VirtualMachineInstanceReplicaSet"),
    ),
}  # fmt: skip
SERVICE_TYPES = {"clusterip": "ClusterIP", "nodeport": "NodePort", "loadbalancer": "LoadBalancer"}
PROTOCOLS = {"tcp": "TCP", "udp": "UDP"}
IP_FAMILIES = {
    "": [],
    "ipv4": ["IPv4"],
    "ipv6": ["IPv6"],
    "ipv4,ipv6": ["IPv4", "IPv6"],
    "ipv6,ipv4": ["IPv6", "IPv4"],
}
IP_FAMILY_POLICIES = {
    "singlestack": "SingleStack",
    "preferdualstack": "PreferDualStack",
    "requiredualstack": "RequireDualStack",
}


class ExposeError(Exception):
    """What virtctl prints before exiting 1."""


@dataclass(frozen=True)
class ExposeFlags:
    name: str
    port: int = 0
    protocol: str = "TCP"
    target_port: str = ""
    service_type: str = "ClusterIP"
    port_name: str = ""
    cluster_ip: str = ""
    external_ip: str = ""
    ip_family: str = ""
    ip_family_policy: str = ""


def check_flags(flags: ExposeFlags) -> dict[str, Any]:
    """The Service fields the flags set; :class:`ExposeError` naming the bad value."""
    protocol = PROTOCOLS.get(flags.protocol.lower())
    if protocol is None:
        raise ExposeError(f"unknown protocol: {flags.protocol}")
    lowered = flags.service_type.lower()
    if lowered == "externalname":
        raise ExposeError(f"type: {flags.service_type} not supported")
    service_type = SERVICE_TYPES.get(lowered)
    if service_type is None:
        raise ExposeError(f"unknown service type: {flags.service_type}")
    families = IP_FAMILIES.get(flags.ip_family.lower())
    if families is None:
        raise ExposeError(f"unknown IPFamily/s: {flags.ip_family}")
    policy = ""
    if flags.ip_family_policy:
        policy = IP_FAMILY_POLICIES.get(flags.ip_family_policy.lower(), "")
        if not policy:
            raise ExposeError(f"unknown IPFamilyPolicy/s: {flags.ip_family_policy}")
    elif len(families) > 1:
        policy = "PreferDualStack"
    return {"protocol": protocol, "type": service_type, "ipFamilies": families, "ipFamilyPolicy": policy}


def _target_port(value: str) -> int | str | None:
    if not value:
        return None
    return int(value) if value.isdigit() else value


def pod_network_ports(vmi_spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ports listed on the interface of the pod network, as Service ports ``port-<n>``."""
    pod_network = next((n["name"] for n in vmi_spec.get("networks") or [] if n.get("pod") is not None), "")
    if not pod_network:
        return []
    for iface in ((vmi_spec.get("domain") or {}).get("devices") or {}).get("interfaces") or []:
        if iface.get("name") == pod_network:
            return [
                {"name": f"port-{i}", "protocol": port.get("protocol") or "", "port": port["port"]}
                for i, port in enumerate(iface.get("ports") or [], 1)
            ]
    return []


def selector_and_ports(kind: str, obj: Mapping[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    name = obj["metadata"]["name"]
    spec = obj.get("spec") or {}
    if kind == "VirtualMachineInstance":
        return {VIRTUAL_MACHINE_NAME_LABEL: name}, pod_network_ports(spec)
    template = (spec.get("template") or {}).get("spec")
    ports = pod_network_ports(template) if template else []
    if kind == "VirtualMachine":
        return {VIRTUAL_MACHINE_NAME_LABEL: name}, ports
    selector = spec.get("selector") or {}
    if not selector.get("matchLabels"):
        raise ExposeError("cannot expose VirtualMachineInstanceReplicaSet without any selector labels")
    if selector.get("matchExpressions"):
        raise ExposeError("cannot expose VirtualMachineInstanceReplicaSet with match expressions")
    return dict(selector["matchLabels"]), ports


def build_service(
    flags: ExposeFlags, namespace: str, selector: Mapping[str, str], ports: list[dict[str, Any]]
) -> dict[str, Any]:
    checked = check_flags(flags)
    if flags.port:
        port: dict[str, Any] = {"protocol": checked["protocol"], "port": flags.port}
        if flags.port_name:
            port["name"] = flags.port_name
        target = _target_port(flags.target_port)
        if target is not None:
            port["targetPort"] = target
        ports = [port]
    if not ports:
        raise ExposeError("couldn't find port via --port flag or introspection")
    spec: dict[str, Any] = {"ports": ports, "selector": dict(selector), "type": checked["type"]}
    if flags.cluster_ip:
        spec["clusterIP"] = flags.cluster_ip
    if checked["ipFamilies"]:
        spec["ipFamilies"] = checked["ipFamilies"]
    if flags.external_ip:
        spec["externalIPs"] = [flags.external_ip]
    if checked["ipFamilyPolicy"]:
        spec["ipFamilyPolicy"] = checked["ipFamilyPolicy"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": flags.name, "namespace": namespace},
        "spec": spec,
    }


def expose_object(api: KubeApi, namespace: str, type_name: str, name: str, flags: ExposeFlags) -> str:
    """Creates the Service; the line virtctl prints."""
    check_flags(flags)
    found = KINDS.get(type_name.lower())
    if found is None:
        raise ExposeError(f"unsupported resource type: {type_name.lower()}")
    resource, kind = found
    try:
        obj = api.get(resource, namespace, name)
    except ApiError as err:
        raise ExposeError(f"error fetching {kind}: {err}") from err
    selector, ports = selector_and_ports(kind, obj)
    service = build_service(flags, namespace, selector, ports)
    try:
        api.create(SERVICES, namespace, service)
    except ApiError as err:
        raise ExposeError(f"service creation failed: {err}") from err
    return f"Service {flags.name} successfully created for {type_name.lower()} {name}"


@click.command(
    name="expose",
    help="Expose a virtual machine instance, virtual machine, or virtual machine instance replica set "
    "as a new service.",
)
@click.argument("type_name", metavar="TYPE")
@click.argument("name")
@click.option(
    "--name", "service_name", required=True, help="Name of the service created for the exposure of the VM."
)
@click.option("--cluster-ip", default="", help="ClusterIP to be assigned to the service.")
@click.option("--external-ip", default="", help="Additional external IP address to accept for the service.")
@click.option("--port", type=int, default=0, help="The port that the service should serve on.")
@click.option("--protocol", default="TCP", help="The network protocol for the service to be created.")
@click.option(
    "--target-port",
    default="",
    help="Name or number for the port on the VM that the service should direct traffic to.",
)
@click.option(
    "--type",
    "service_type",
    default="ClusterIP",
    help="Type for this service: ClusterIP, NodePort, or LoadBalancer.",
)
@click.option("--port-name", default="", help="Name of the port. Optional.")
@click.option("--ip-family", default="", help="IPv4, IPv6, IPv4,IPv6 or IPv6,IPv4.")
@click.option("--ip-family-policy", default="", help="SingleStack, PreferDualStack or RequireDualStack.")
@client_flags
@click.pass_context
def expose(
    ctx: click.Context,
    /,
    type_name: str,
    name: str,
    service_name: str,
    cluster_ip: str,
    external_ip: str,
    port: int,
    protocol: str,
    target_port: str,
    service_type: str,
    port_name: str,
    ip_family: str,
    ip_family_policy: str,
    **client: Any,
) -> None:
    flags = ExposeFlags(
        name=service_name,
        port=port,
        protocol=protocol,
        target_port=target_port,
        service_type=service_type,
        port_name=port_name,
        cluster_ip=cluster_ip,
        external_ip=external_ip,
        ip_family=ip_family,
        ip_family_policy=ip_family_policy,
    )
    try:
        check_flags(flags)
        api, namespace = connect(flags_from(ctx, **client))
        click.echo(expose_object(api, namespace, type_name, name, flags))
    except ExposeError as err:
        click.echo(f"Error: {err}", err=True)
        sys.exit(1)
