"""A stand-in for the launcher's converter producing domains libvirt's test driver runs, for tests about
the launcher's server, its domain manager and the handler driving it rather than the converter.

The VMI's spec can ask it to fail: ``domain.explode`` (a converter bug), ``domain.memory: bad`` (a field
error); ``domain.noACPI`` leaves ACPI out.
"""

from __future__ import annotations

import json
from typing import Any

from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts


def driver_domain_xml(facts: VMIFacts, options: Any, node: NodeFacts) -> str:
    """A domain the test driver runs, with the KubeVirt metadata the launcher's pipeline writes."""
    vmi = json.loads(facts.raw)
    metadata = vmi["metadata"]
    grace = vmi.get("spec", {}).get("terminationGracePeriodSeconds", 30)
    if vmi.get("spec", {}).get("domain", {}).get("explode"):
        raise RuntimeError("converter bug")
    if vmi.get("spec", {}).get("domain", {}).get("memory") == "bad":
        raise ValueError("spec.domain.memory.guest: bad quantity")
    acpi = "" if vmi.get("spec", {}).get("domain", {}).get("noACPI") else "<features><acpi/></features>"
    return (
        f'<domain type="test"><name>{metadata.get("namespace", "default")}_{metadata["name"]}</name>'
        f'<memory unit="KiB">131072</memory><os><type arch="x86_64">hvm</type></os>{acpi}'
        f'<metadata><kubevirt xmlns="http://kubevirt.io"><uid>{metadata.get("uid", "")}</uid>'
        f"<graceperiod><deletionGracePeriodSeconds>{grace}</deletionGracePeriodSeconds></graceperiod>"
        "</kubevirt></metadata></domain>"
    )
