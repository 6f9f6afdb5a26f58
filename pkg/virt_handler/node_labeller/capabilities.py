"""The three XML documents the node labeller reads, parsed into one :class:`HostCapabilities`.

``virsh_domcapabilities.xml`` (libvirt's domain capabilities for the node's machine type: CPU modes and
models, SEV), ``supported_features.xml`` (the host-model CPU expanded to every feature, from
``hypervisor-cpu-baseline --features``) and ``capabilities.xml`` (host capabilities: the TSC counter and
every machine type of every guest architecture). File names and directory are KubeVirt's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lxml import etree

DEFAULT_DIRECTORY = Path("/var/lib/kubevirt-node-labeller")
DOMCAPABILITIES_FILE = "virsh_domcapabilities.xml"
SUPPORTED_FEATURES_FILE = "supported_features.xml"
CAPABILITIES_FILE = "capabilities.xml"

REQUIRE_POLICY = "require"


class CapabilitiesError(Exception):
    """A capabilities file is missing or is not the XML libvirt writes."""


@dataclass(frozen=True)
class HostCPUModel:
    name: str
    vendor: str
    required_features: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TSCCounter:
    frequency: int
    scalable: bool


@dataclass(frozen=True)
class HostCapabilities:
    """What the labels are made from; every field optional, as on a node without KVM or host-model."""

    usable_models: tuple[str, ...] = ()
    known_models: tuple[str, ...] = ()
    host_model: HostCPUModel | None = None
    supported_features: frozenset[str] = frozenset()
    machines: tuple[str, ...] = ()
    deprecated_machines: tuple[str, ...] = ()  # those libvirt marks deprecated: a metric, not labels
    tsc: TSCCounter | None = None
    sev: bool = False
    sev_es: bool = False
    secure_execution: bool = False


def _parse(path: Path) -> etree._Element:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise CapabilitiesError(f"{path}: cannot read: {err.strerror}") from err
    try:
        # No entities, no network: these files come from a helper container, not from us.
        parser = etree.XMLParser(resolve_entities=False, no_network=True)
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as err:
        raise CapabilitiesError(f"{path}: not well-formed XML: {err}") from err


def parse_domain_capabilities(root: etree._Element) -> HostCapabilities:
    """CPU models (usable and known), the host-model CPU and SEV from ``<domainCapabilities>``."""
    usable: list[str] = []
    known: list[str] = []
    host_model: HostCPUModel | None = None
    for mode in root.findall("cpu/mode"):
        models = mode.findall("model")
        if mode.get("name") == "host-model":
            if not models:
                raise CapabilitiesError("domain capabilities: the host-model mode names no CPU model")
            required = frozenset(
                f.get("name", "") for f in mode.findall("feature") if f.get("policy") == REQUIRE_POLICY
            )
            host_model = HostCPUModel(
                name=(models[0].text or "").strip(),
                vendor=(mode.findtext("vendor") or "").strip(),
                required_features=required - {""},
            )
        for model in models:
            name = (model.text or "").strip()
            usable_attr = model.get("usable")
            if not usable_attr or not name:
                continue  # the host-model entry has no "usable": it is not a named model
            known.append(name)
            if usable_attr != "no":
                usable.append(name)
    sev = root.find("features/sev")
    sev_supported = sev is not None and sev.get("supported") == "yes"
    max_es = sev.findtext("maxESGuests") if sev is not None else None
    pv = root.find("features/s390-pv")
    return HostCapabilities(
        usable_models=tuple(usable),
        known_models=tuple(known),
        host_model=host_model,
        sev=sev_supported,
        sev_es=sev_supported and (max_es or "0").strip() not in ("", "0"),
        secure_execution=pv is not None and pv.get("supported") == "yes",
    )


def parse_supported_features(root: etree._Element) -> frozenset[str]:
    """The features the baseline CPU requires (``policy='require'``): the ``cpu-feature`` labels."""
    return frozenset(
        f.get("name", "") for f in root.findall("feature") if f.get("policy") == REQUIRE_POLICY
    ) - {""}


def parse_host_capabilities(root: etree._Element) -> tuple[tuple[str, ...], TSCCounter | None]:
    """Every guest architecture's machine types (in order, once each) and the host's TSC counter."""
    machines: dict[str, None] = {}
    for machine in root.findall("guest/arch/machine"):
        name = (machine.text or "").strip()
        if name:
            machines[name] = None
    tsc: TSCCounter | None = None
    counter = root.find("host/cpu/counter")
    if counter is not None and counter.get("name") == "tsc":
        try:
            tsc = TSCCounter(
                frequency=int(counter.get("frequency", "")), scalable=counter.get("scaling") == "yes"
            )
        except ValueError:
            tsc = None
    return tuple(machines), tsc


def parse_deprecated_machines(root: etree._Element) -> tuple[str, ...]:
    """The machine types libvirt marks ``deprecated='yes'`` (in order, once each)."""
    machines: dict[str, None] = {}
    for machine in root.findall("guest/arch/machine"):
        name = (machine.text or "").strip()
        if name and machine.get("deprecated") == "yes":
            machines[name] = None
    return tuple(machines)


def load(directory: Path = DEFAULT_DIRECTORY, *, features: bool = True) -> HostCapabilities:
    """Read the three files from ``directory``; ``features`` is False where the architecture has none.

    Raises :class:`CapabilitiesError` naming the file at fault.
    """
    domcaps = parse_domain_capabilities(_parse(directory / DOMCAPABILITIES_FILE))
    supported = (
        parse_supported_features(_parse(directory / SUPPORTED_FEATURES_FILE)) if features else frozenset()
    )
    host = _parse(directory / CAPABILITIES_FILE)
    machines, tsc = parse_host_capabilities(host)
    return HostCapabilities(
        usable_models=domcaps.usable_models,
        known_models=domcaps.known_models,
        host_model=domcaps.host_model,
        supported_features=supported,
        machines=machines,
        deprecated_machines=parse_deprecated_machines(host),
        tsc=tsc,
        sev=domcaps.sev,
        sev_es=domcaps.sev_es,
        secure_execution=domcaps.secure_execution,
    )
