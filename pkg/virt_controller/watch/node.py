"""The node controller: VMIs on a node whose virt-handler stopped beating, or on a vanished node, fail.

virt-handler writes ``kubevirt.io/heartbeat`` on its node; a node without the annotation counts as
responsive. An unresponsive node is labelled unschedulable, and each Running or Scheduled VMI there
that has no live launcher pod becomes Failed with reason NodeUnresponsive. Existing nodes are checked
again every minute.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from kubevirt.client import NODES, VIRTUAL_MACHINE_INSTANCES, EventSink, KubeApi
from kubevirt.controller import RequeueAfter, Store, key_of
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch import pods as podutil
from kubevirt.virt_controller.watch.common import Clock, Enqueue, controller_ref_of_dict, parse_time, utc_now
from kubevirt_api.core.v1 import VirtualMachineInstance, VirtualMachineInstancePhase
from kubevirt_api.core.v1.constants import NODE_NAME_LABEL, NODE_SCHEDULABLE, VIRT_HANDLER_HEARTBEAT

NODE_UNRESPONSIVE_REASON: Final = "NodeUnresponsive"
HEARTBEAT_TIMEOUT: Final = timedelta(minutes=5)
RECHECK_SECONDS: Final = 60.0

Node = dict[str, Any]


class NodeController:
    """Fails the VMIs of unresponsive or vanished nodes. Informers: Nodes (keyed), VMIs, Pods."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        node_store: Store[Node],
        vmi_store: Store[VirtualMachineInstance],
        pod_store: Store[dict[str, Any]],
        enqueue: Enqueue,
        clock: Clock = utc_now,
        heartbeat_timeout: timedelta = HEARTBEAT_TIMEOUT,
        recheck_seconds: float = RECHECK_SECONDS,
    ) -> None:
        self._api = api
        self._events = events
        self._nodes = node_store
        self._vmis = vmi_store
        self._pods = pod_store
        self._enqueue = enqueue
        self._clock = clock
        self._timeout = heartbeat_timeout
        self._recheck = recheck_seconds
        self._log = get_logger(controller="node")

    def reconcile(self, key: str) -> None:
        node = self._nodes.get_by_key(key)
        try:
            unresponsive = self._is_unresponsive(node)
        except ValueError as err:
            self._log.error("cannot read the node's heartbeat, not retried", node=key, error=str(err))
            return
        if unresponsive:
            if node is not None and (node["metadata"].get("labels") or {}).get(NODE_SCHEDULABLE) == "true":
                self._mark_unschedulable(node)
            self._fail_vmis_without_pods(key)
        if node is not None:
            raise RequeueAfter(self._recheck)

    def _is_unresponsive(self, node: Node | None) -> bool:
        if node is None:
            return True
        heartbeat = (node["metadata"].get("annotations") or {}).get(VIRT_HANDLER_HEARTBEAT)
        if heartbeat is None:
            return False
        return parse_time(heartbeat) < self._clock() - self._timeout

    def _mark_unschedulable(self, node: Node) -> None:
        self._events.event(
            node,
            "Normal",
            NODE_UNRESPONSIVE_REASON,
            "virt-handler is not responsive, marking node as unresponsive",
        )
        self._api.patch(
            NODES,
            None,
            node["metadata"]["name"],
            {"metadata": {"labels": {NODE_SCHEDULABLE: "false"}}},
            patch_type="strategic",
        )

    def _fail_vmis_without_pods(self, node_name: str) -> None:
        vmis = [
            vmi
            for vmi in self._vmis.by_index(f"label:{NODE_NAME_LABEL}", node_name)
            if vmi.is_running() or vmi.is_scheduled()
        ]
        if not vmis:
            return
        alive = {
            str(ref.get("uid"))
            for pod in self._pods.by_index("node", node_name)
            if (ref := controller_ref_of_dict(pod)) is not None
            and ref.get("kind") == "VirtualMachineInstance"
            and not podutil.all_containers_terminated(pod)
            and not podutil.is_pod_final(pod)
        }
        errors: list[str] = []
        for vmi in vmis:
            meta = vmi.metadata
            if meta is None or meta.uid in alive:
                continue
            self._events.event(
                vmi,
                "Normal",
                NODE_UNRESPONSIVE_REASON,
                f"virt-handler on node {node_name} is not responsive, marking VMI as failed",
            )
            try:
                self._api.patch(
                    VIRTUAL_MACHINE_INSTANCES,
                    meta.namespace,
                    meta.name or "",
                    [
                        {
                            "op": "replace",
                            "path": "/status/phase",
                            "value": VirtualMachineInstancePhase.FAILED,
                        },
                        {"op": "add", "path": "/status/reason", "value": NODE_UNRESPONSIVE_REASON},
                    ],
                )
            except Exception as err:
                errors.append(
                    f"failed to move vmi {meta.name} in namespace {meta.namespace} to final state: {err}"
                )
        if errors:
            raise RuntimeError("; ".join(errors))

    # -- informer event handlers -----------------------------------------------------------------------

    def on_node_add(self, node: Node) -> None:
        self._enqueue(key_of(node))

    def on_node_update(self, old: Node, new: Node) -> None:
        self._enqueue(key_of(new))

    def on_node_delete(self, node: Node) -> None:
        self._enqueue(key_of(node))

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_node_of(vmi)

    def on_vmi_update(self, old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        self._enqueue_node_of(new)

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        """A VMI leaving changes nothing on its node."""

    def _enqueue_node_of(self, vmi: VirtualMachineInstance) -> None:
        node = vmi.status.node_name if vmi.status is not None else None
        if node:
            self._enqueue(node)
