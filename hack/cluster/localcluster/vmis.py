"""VMIs on the local cluster as scripts and tests meet them through kubectl: waiting for a VMI's phase, and
asking virt-api's admission webhooks to judge a VMI they must refuse."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from .handle import Cluster

JSON = dict[str, Any]
RUNNING = "Running"
FAILED = "Failed"
# KubeVirt's VMI validator's cause for a disk without its volume (the CRD's schema cannot say this).
INVALID_VMI_CAUSE = "spec.domain.devices.disks[0].Name 'rootdisk' not found"


def vmi_phase(vmi: JSON | None) -> str:
    """A VMI's ``status.phase`` ("" for no VMI or no phase yet)."""
    return str(((vmi or {}).get("status") or {}).get("phase") or "")


def wait_vmi_phase(
    cluster: Cluster,
    name: str,
    namespace: str,
    *phases: str,
    timeout: float,
    other_than_uid: str | None = None,
    progress: Callable[[str], None] | None = None,
    interval: float = 1.0,
) -> JSON:
    """Polls VMI ``namespace/name`` until its phase is one of ``phases`` (Running when none are given) and
    returns it; with ``other_than_uid``, only another VMI than that one counts (a restarted VMI).

    A VMI that reaches Failed when Failed is not awaited ends the wait at once, with its status; a VMI not
    there in time fails after ``timeout`` seconds, naming the last phase seen. ``progress`` is told each
    phase the VMI passes through, with the seconds since the wait began."""
    wanted = phases or (RUNNING,)
    began = time.monotonic()
    seen: str | None = None
    while True:
        found = cluster.find("vmi", name, namespace)
        vmi = found if found is not None and found["metadata"].get("uid") != other_than_uid else None
        phase = vmi_phase(vmi)
        elapsed = time.monotonic() - began
        if progress is not None and phase != seen:
            progress(f"  [{elapsed:5.0f} s] VMI {name}: {phase or '-'}")
        seen = phase
        if vmi is not None and phase in wanted:
            return vmi
        if vmi is not None and phase == FAILED:
            status = json.dumps(vmi.get("status"))
            raise AssertionError(
                f"VMI {namespace}/{name} Failed while waiting for {'/'.join(wanted)}: {status}"
            )
        if elapsed > timeout:
            raise AssertionError(
                f"VMI {namespace}/{name} not {'/'.join(wanted)} within {timeout:.0f} s (phase {phase or '-'})"
            )
        time.sleep(interval)


def invalid_vmi(namespace: str) -> JSON:
    """A VMI whose disk has no volume: the CRD's schema lets it through, virt-api's validating webhook refuses
    it with :data:`INVALID_VMI_CAUSE`."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "no-volume", "namespace": namespace},
        "spec": {
            "domain": {
                "resources": {"requests": {"memory": "128Mi"}},
                "devices": {"disks": [{"name": "rootdisk", "disk": {}}]},
            }
        },
    }


def invalid_vmi_refusal(cluster: Cluster, namespace: str) -> str:
    """Asks the API server to create :func:`invalid_vmi` (a server-side dry run: nothing is stored); returns
    kubectl's error, which holds :data:`INVALID_VMI_CAUSE` when the webhook refused it ("" if accepted)."""
    stdin = json.dumps(invalid_vmi(namespace))
    created = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=stdin, check=False)
    return "" if created.returncode == 0 else created.stderr


def set_run_strategy(cluster: Cluster, namespace: str, name: str, strategy: str) -> None:
    """Sets VM ``namespace/name``'s ``spec.runStrategy``."""
    patch = json.dumps({"spec": {"runStrategy": strategy}})
    cluster.kubectl("patch", "vm", name, "-n", namespace, "--type=merge", "-p", patch)
