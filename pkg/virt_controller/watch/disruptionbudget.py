"""The disruption-budget controller: removes PodDisruptionBudgets that a VMI controls.

Older KubeVirt releases guarded each LiveMigrate VMI with a PodDisruptionBudget owned by the VMI
(``kubevirt-disruption-budget-*``). KubeVirt v1.6 protects such VMIs in the eviction webhook instead
(an eviction marks ``status.evacuationNodeName`` and is refused, and the evacuation controller migrates
the VMI), so a PDB a VMI controls is a leftover that would block ``kubectl drain`` for good after the
VMI has moved: this controller deletes it, with a ``SuccessfulDelete`` / ``FailedDelete`` event on the
VMI. The work queue is keyed by the VMI's ``namespace/name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubevirt.client import POD_DISRUPTION_BUDGETS, EventSink, KubeApi
from kubevirt.client.errors import NotFoundError
from kubevirt.controller import Store, key_for, split_key
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.common import Enqueue, controller_ref_of_dict
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.constants import API_VERSION
from kubevirt_api.view import JSON

SUCCESSFUL_DELETE: Final = "SuccessfulDelete"
FAILED_DELETE: Final = "FailedDelete"
VMI_KIND: Final = "VirtualMachineInstance"


def controlling_vmi(pdb: Mapping[str, Any]) -> str | None:
    """The name of the VMI controlling ``pdb``, if a VMI does."""
    ref = controller_ref_of_dict(pdb)
    if ref is None or ref.get("kind") != VMI_KIND:
        return None
    name = ref.get("name")
    return str(name) if name else None


class DisruptionBudgetController:
    """Deletes VMI-owned PDBs. Informers: VMIs and PodDisruptionBudgets (both enqueue the VMI key)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        pdb_store: Store[JSON],
        vmi_store: Store[VirtualMachineInstance],
        enqueue: Enqueue,
    ) -> None:
        self._api = api
        self._events = events
        self._pdbs = pdb_store
        self._vmis = vmi_store
        self._enqueue = enqueue
        self._log = get_logger(controller="disruption-budget")

    def on_pdb_add(self, pdb: JSON) -> None:
        self._enqueue_owner(pdb)

    def on_pdb_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue_owner(new)

    def on_pdb_delete(self, pdb: JSON) -> None:
        """A PDB gone needs nothing more."""

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_vmi(vmi)

    def on_vmi_update(self, _old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        """PDBs are looked at when they appear; a VMI's changes do not create any."""

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_vmi(vmi)

    def _enqueue_vmi(self, vmi: VirtualMachineInstance) -> None:
        if vmi.metadata is not None:
            self._enqueue(key_for(vmi.metadata.namespace, vmi.metadata.name or ""))

    def _enqueue_owner(self, pdb: JSON) -> None:
        name = controlling_vmi(pdb)
        if name is not None:
            self._enqueue(key_for(pdb["metadata"].get("namespace"), name))

    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        vmi = self._vmis.get_by_key(key)
        subject: Any = vmi if vmi is not None else _vmi_reference(namespace, name)
        errors: list[str] = []
        for pdb in self._pdbs.by_index("namespace", namespace or ""):
            if controlling_vmi(pdb) != name or pdb["metadata"].get("deletionTimestamp"):
                continue
            pdb_name = pdb["metadata"]["name"]
            try:
                self._api.delete(POD_DISRUPTION_BUDGETS, namespace, pdb_name)
            except NotFoundError:
                continue
            except Exception as err:  # reported on the VMI, retried through the queue
                self._events.event(
                    subject,
                    "Warning",
                    FAILED_DELETE,
                    f"Error deleting the PodDisruptionBudget {pdb_name}: {err}",
                )
                errors.append(f"{pdb_name}: {err}")
                continue
            self._log.info("deleted a VMI's PodDisruptionBudget", vmi=key, pdb=pdb_name)
            self._events.event(
                subject, "Normal", SUCCESSFUL_DELETE, f"Deleted PodDisruptionBudget {pdb_name}"
            )
        if errors:
            raise RuntimeError("deleting PodDisruptionBudgets failed: " + "; ".join(errors))


def _vmi_reference(namespace: str | None, name: str) -> JSON:
    # A VMI already gone still names the events about its leftovers.
    return {
        "apiVersion": API_VERSION,
        "kind": VMI_KIND,
        "metadata": {"namespace": namespace, "name": name},
    }
