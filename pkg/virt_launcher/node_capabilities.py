"""The node labeller's helper (KubeVirt's ``node-labeller.sh``): libvirt's view of this node, as files.

Run once per node before virt-handler starts, from the launcher's image (it has libvirt and QEMU). It
writes the domain capabilities of the node's default machine type, the host-model CPU expanded to all
its features, and the host capabilities into the directory virt-handler's node labeller reads. The
virtualization type is KVM where /dev/kvm can be used, and QEMU's TCG where it cannot or emulation is
forced: the labels then describe what the emulator offers.
"""

from __future__ import annotations

import os
import platform
import tempfile
from pathlib import Path

import libvirt
from lxml import etree

from kubevirt.log import get_logger
from kubevirt.virt_launcher.libvirtd import Libvirtd, LibvirtdError
from kubevirt.virt_launcher.virtwrap.node import decide_emulation

DOMCAPABILITIES_FILE = "virsh_domcapabilities.xml"
SUPPORTED_FEATURES_FILE = "supported_features.xml"
CAPABILITIES_FILE = "capabilities.xml"

# The machine type KubeVirt asks about per architecture; others get no labels.
MACHINES = {"x86_64": "q35", "aarch64": "virt", "s390x": "s390-ccw-virtio"}
# hypervisor-cpu-baseline works on these only.
BASELINE_ARCHES = ("x86_64", "s390x")

EXIT_OK = 0
EXIT_FAILURE = 1


def _write(directory: Path, name: str, text: str) -> None:
    # Atomic: virt-handler never reads a half-written file.
    with tempfile.NamedTemporaryFile("w", dir=directory, prefix=f".{name}.", delete=False) as out:
        out.write(text if text.endswith("\n") else text + "\n")
        os.fchmod(out.fileno(), 0o644)
    os.replace(out.name, directory / name)


def host_model_cpu(domcaps: str) -> str:
    """The host-model CPU of domain capabilities as a ``<cpu>`` definition (what virsh extracts)."""
    root = etree.fromstring(domcaps.encode(), etree.XMLParser(resolve_entities=False, no_network=True))
    mode = root.find("cpu/mode[@name='host-model']")
    if mode is None or mode.get("supported") != "yes":
        raise ValueError("the domain capabilities offer no host-model CPU")
    cpu = etree.Element("cpu", mode="custom", match="exact")
    for child in mode:
        if child.tag in ("model", "vendor", "feature"):
            cpu.append(child)
    return etree.tostring(cpu, encoding="unicode")


def write_capabilities(conn: libvirt.virConnect, directory: Path, *, arch: str, virttype: str) -> list[str]:
    """Write the files for ``arch``; returns the names written (none for an architecture without labels)."""
    machine = MACHINES.get(arch)
    if machine is None:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    domcaps = conn.getDomainCapabilities(None, arch, machine, virttype, 0)
    _write(directory, DOMCAPABILITIES_FILE, domcaps)
    written = [DOMCAPABILITIES_FILE]
    if arch in BASELINE_ARCHES:
        baseline = conn.baselineHypervisorCPU(
            None,
            arch,
            machine,
            virttype,
            [host_model_cpu(domcaps)],
            libvirt.VIR_CONNECT_BASELINE_CPU_EXPAND_FEATURES,
        )
        _write(directory, SUPPORTED_FEATURES_FILE, baseline)
        written.append(SUPPORTED_FEATURES_FILE)
    _write(directory, CAPABILITIES_FILE, conn.getCapabilities())
    written.append(CAPABILITIES_FILE)
    return written


def run(
    directory: Path,
    *,
    runtime_dir: Path,
    libvirt_uri: str | None = None,
    capabilities_cache: Path | None = None,
    force_emulation: bool = False,
) -> int:
    """Start a private libvirtd (unless ``libvirt_uri`` names one), write the files, stop. Exit code."""
    log = get_logger()
    arch = platform.machine()
    virttype = "qemu" if decide_emulation(force=force_emulation, allow=True) else "kvm"
    daemon: Libvirtd | None = None
    uri = libvirt_uri
    if uri is None:
        daemon = Libvirtd(runtime_dir, capabilities_cache=capabilities_cache)
        try:
            daemon.start()
        except (LibvirtdError, OSError) as err:
            log.error("cannot start libvirtd", reason=str(err))
            daemon.stop()
            return EXIT_FAILURE
        uri = daemon.uri
    try:
        libvirt.registerErrorHandler(lambda *_: None, None)
        conn = libvirt.open(uri)
        try:
            written = write_capabilities(conn, directory, arch=arch, virttype=virttype)
        finally:
            conn.close()
    except libvirt.libvirtError as err:
        log.error("cannot read the node's capabilities", uri=uri, reason=err.get_error_message())
        return EXIT_FAILURE
    except (OSError, ValueError) as err:
        log.error("cannot write the node's capabilities", directory=str(directory), reason=str(err))
        return EXIT_FAILURE
    finally:
        if daemon is not None:
            daemon.stop()
    log.info(
        "node capabilities written", directory=str(directory), files=written, virttype=virttype, arch=arch
    )
    return EXIT_OK
