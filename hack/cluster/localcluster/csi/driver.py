"""The CSI Identity, Controller and Node services over :mod:`.store` and :mod:`.node`.

A controller process holds every node's data directory (the cluster's nodes share the host's filesystem, so
one process sees them all and can restore a snapshot onto another node); a node process holds its own. Both
may also hold the shared data directory: a volume asked for with a multi-node access mode (a ReadWriteMany
or ReadOnlyMany claim) is made there, wherever the provisioner asks for it, and is accessible from every
node, so a VM on it can live-migrate. One process may be controller and node, as in the sanity test.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from typing import TypeVar

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from .node import NodeService
from .proto import csi_pb2, csi_pb2_grpc
from .store import MAX_NAME, SHARED, CsiError, Snapshot, Store, Volume, round_capacity

DRIVER_NAME = "hostpath.csi.kubevirt-py.io"
TOPOLOGY_KEY = f"topology.{DRIVER_NAME}/node"
VERSION = "0.1.0"

AccessMode = csi_pb2.VolumeCapability.AccessMode
SINGLE_NODE_ACCESS_MODES = (
    AccessMode.SINGLE_NODE_WRITER,
    AccessMode.SINGLE_NODE_READER_ONLY,
    AccessMode.SINGLE_NODE_SINGLE_WRITER,
    AccessMode.SINGLE_NODE_MULTI_WRITER,
)
# A volume for these is made in the shared data directory.
MULTI_NODE_ACCESS_MODES = (
    AccessMode.MULTI_NODE_READER_ONLY,
    AccessMode.MULTI_NODE_SINGLE_WRITER,
    AccessMode.MULTI_NODE_MULTI_WRITER,
)
ControllerRPC = csi_pb2.ControllerServiceCapability.RPC
CONTROLLER_CAPABILITIES = (
    ControllerRPC.CREATE_DELETE_VOLUME,
    ControllerRPC.CREATE_DELETE_SNAPSHOT,
    ControllerRPC.LIST_SNAPSHOTS,
    ControllerRPC.GET_SNAPSHOT,
    ControllerRPC.CLONE_VOLUME,
    ControllerRPC.EXPAND_VOLUME,
)
NodeRPC = csi_pb2.NodeServiceCapability.RPC
NODE_CAPABILITIES = (NodeRPC.GET_VOLUME_STATS, NodeRPC.EXPAND_VOLUME)

T = TypeVar("T")


def _log(method: str, outcome: str) -> None:
    print(f"{method}: {outcome}", file=sys.stderr, flush=True)


def _serve(context: grpc.ServicerContext, method: str, call: Callable[[], T]) -> T:
    """Runs ``call``; a :class:`CsiError` becomes the gRPC status it names, any other OS error INTERNAL."""
    try:
        result = call()
    except CsiError as failure:
        _log(method, f"{failure.code.name}: {failure.message}")
        context.abort(failure.code, failure.message)
    except OSError as error:  # a host failure the driver did not foresee
        _log(method, f"INTERNAL: {error}")
        context.abort(grpc.StatusCode.INTERNAL, str(error))
    _log(method, "OK")
    return result


def _require(value: object, what: str) -> None:
    if not value:
        raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, f"{what} is required")


def _unimplemented(context: grpc.ServicerContext, method: str) -> None:
    context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not supported by {DRIVER_NAME}")


def _wants_block(capabilities: Sequence[csi_pb2.VolumeCapability]) -> bool:
    """Whether the capabilities ask for a Block volume; each must name an access type and a supported
    access mode, and all the same type."""
    _require(capabilities, "volume_capabilities")
    kinds = set()
    for capability in capabilities:
        kind = capability.WhichOneof("access_type")
        if kind is None:
            raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, "a volume capability has no access type")
        mode = capability.access_mode.mode
        if mode not in SINGLE_NODE_ACCESS_MODES + MULTI_NODE_ACCESS_MODES:
            raise CsiError(
                grpc.StatusCode.INVALID_ARGUMENT, f"access mode {AccessMode.Mode.Name(mode)} is not supported"
            )
        kinds.add(kind)
    if len(kinds) > 1:
        raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, "both block and mount access asked for")
    return kinds == {"block"}


def _wants_multi_node(capabilities: Sequence[csi_pb2.VolumeCapability]) -> bool:
    """Whether a capability asks for access from several nodes (the volume must be a shared one)."""
    return any(capability.access_mode.mode in MULTI_NODE_ACCESS_MODES for capability in capabilities)


def _topology(node: str) -> csi_pb2.Topology:
    return csi_pb2.Topology(segments={TOPOLOGY_KEY: node})


def _timestamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


class Identity(csi_pb2_grpc.IdentityServicer):
    def __init__(self, *, controller: bool) -> None:
        self.controller = controller

    def GetPluginInfo(  # noqa: N802 - the gRPC method names
        self, request: csi_pb2.GetPluginInfoRequest, context: grpc.ServicerContext
    ) -> csi_pb2.GetPluginInfoResponse:
        return csi_pb2.GetPluginInfoResponse(name=DRIVER_NAME, vendor_version=VERSION)

    def GetPluginCapabilities(  # noqa: N802
        self, request: csi_pb2.GetPluginCapabilitiesRequest, context: grpc.ServicerContext
    ) -> csi_pb2.GetPluginCapabilitiesResponse:
        Service = csi_pb2.PluginCapability.Service  # noqa: N806
        services = [Service.VOLUME_ACCESSIBILITY_CONSTRAINTS]
        if self.controller:
            services.append(Service.CONTROLLER_SERVICE)
        capabilities = [csi_pb2.PluginCapability(service=Service(type=kind)) for kind in services]
        online = csi_pb2.PluginCapability.VolumeExpansion(
            type=csi_pb2.PluginCapability.VolumeExpansion.ONLINE
        )
        capabilities.append(csi_pb2.PluginCapability(volume_expansion=online))
        return csi_pb2.GetPluginCapabilitiesResponse(capabilities=capabilities)

    def Probe(  # noqa: N802
        self, request: csi_pb2.ProbeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ProbeResponse:
        return csi_pb2.ProbeResponse()


def _volume_message(
    volume: Volume, nodes: Sequence[str], source: csi_pb2.VolumeContentSource | None = None
) -> csi_pb2.Volume:
    """The volume, accessible from its node, or from each of ``nodes`` (every node's) if shared."""
    accessible = sorted(nodes) if volume.shared else [volume.node]
    message = csi_pb2.Volume(
        volume_id=volume.id,
        capacity_bytes=volume.capacity,
        accessible_topology=[_topology(node) for node in accessible],
    )
    if source is not None and source.WhichOneof("type") is not None:
        message.content_source.CopyFrom(source)
    return message


def _snapshot_message(snapshot: Snapshot) -> csi_pb2.Snapshot:
    return csi_pb2.Snapshot(
        snapshot_id=snapshot.id,
        source_volume_id=snapshot.source_volume,
        size_bytes=snapshot.size,
        creation_time=_timestamp(snapshot.created),
        ready_to_use=True,
    )


class Controller(csi_pb2_grpc.ControllerServicer):
    def __init__(self, store: Store) -> None:
        self.store = store

    def CreateVolume(  # noqa: N802
        self, request: csi_pb2.CreateVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.CreateVolumeResponse:
        return _serve(context, "CreateVolume", lambda: self._create_volume(request))

    def _create_volume(self, request: csi_pb2.CreateVolumeRequest) -> csi_pb2.CreateVolumeResponse:
        _require(request.name, "name")
        if len(request.name.encode()) > MAX_NAME:
            raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, f"name is longer than {MAX_NAME} bytes")
        block = _wants_block(request.volume_capabilities)
        capacity = round_capacity(request.capacity_range.required_bytes, request.capacity_range.limit_bytes)
        source = request.volume_content_source
        kind = source.WhichOneof("type")
        origin = ""
        if kind == "snapshot":
            _require(source.snapshot.snapshot_id, "volume_content_source.snapshot.snapshot_id")
            origin = f"snapshot:{source.snapshot.snapshot_id}"
        elif kind == "volume":
            _require(source.volume.volume_id, "volume_content_source.volume.volume_id")
            origin = f"volume:{source.volume.volume_id}"
        with self.store.lock:
            if _wants_multi_node(request.volume_capabilities):
                node = self._shared_node()
            else:
                node = self._pick_node(request.accessibility_requirements)
            volume, _new = self.store.create_volume(request.name, node, capacity, block=block, source=origin)
        return csi_pb2.CreateVolumeResponse(volume=_volume_message(volume, list(self.store.nodes), source))

    def _shared_node(self) -> str:
        """A multi-node volume's place: the shared data directory, whatever topology is asked for (the
        provisioner's strict topology names only the first consumer's node; the volume serves them all)."""
        if self.store.shared is None:
            raise CsiError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "multi-node access modes (ReadWriteMany, ReadOnlyMany) need a shared data directory: "
                "the controller runs without --shared-dir",
            )
        return SHARED

    def _pick_node(self, requirement: csi_pb2.TopologyRequirement) -> str:
        """The first preferred, then requisite, topology naming one of our nodes; without requirements,
        the first node."""
        asked = [*requirement.preferred, *requirement.requisite]
        for topology in asked:
            node = topology.segments.get(TOPOLOGY_KEY, "")
            if node in self.store.nodes:
                return node
        if asked:
            raise CsiError(
                grpc.StatusCode.RESOURCE_EXHAUSTED, "no node of this driver in the accessible topology"
            )
        return sorted(self.store.nodes)[0]

    def DeleteVolume(  # noqa: N802
        self, request: csi_pb2.DeleteVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.DeleteVolumeResponse:
        def delete() -> csi_pb2.DeleteVolumeResponse:
            _require(request.volume_id, "volume_id")
            with self.store.lock:
                self.store.delete_volume(request.volume_id)
            return csi_pb2.DeleteVolumeResponse()

        return _serve(context, "DeleteVolume", delete)

    def ValidateVolumeCapabilities(  # noqa: N802
        self, request: csi_pb2.ValidateVolumeCapabilitiesRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ValidateVolumeCapabilitiesResponse:
        def validate() -> csi_pb2.ValidateVolumeCapabilitiesResponse:
            _require(request.volume_id, "volume_id")
            _require(request.volume_capabilities, "volume_capabilities")
            with self.store.lock:
                found = self.store.find_volume(request.volume_id)
            if found is None:
                raise CsiError(grpc.StatusCode.NOT_FOUND, f"volume {request.volume_id} not found")
            _data, volume = found
            try:
                block = _wants_block(request.volume_capabilities)
            except CsiError as failure:
                return csi_pb2.ValidateVolumeCapabilitiesResponse(message=failure.message)
            if block != volume.block:
                return csi_pb2.ValidateVolumeCapabilitiesResponse(message="volume mode differs")
            if _wants_multi_node(request.volume_capabilities) and not volume.shared:
                return csi_pb2.ValidateVolumeCapabilitiesResponse(
                    message="the volume is node-local: multi-node access modes are not offered"
                )
            confirmed = csi_pb2.ValidateVolumeCapabilitiesResponse.Confirmed(
                volume_context=request.volume_context,
                volume_capabilities=request.volume_capabilities,
                parameters=request.parameters,
            )
            return csi_pb2.ValidateVolumeCapabilitiesResponse(confirmed=confirmed)

        return _serve(context, "ValidateVolumeCapabilities", validate)

    def ControllerGetCapabilities(  # noqa: N802
        self, request: csi_pb2.ControllerGetCapabilitiesRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerGetCapabilitiesResponse:
        capabilities = [
            csi_pb2.ControllerServiceCapability(rpc=csi_pb2.ControllerServiceCapability.RPC(type=kind))
            for kind in CONTROLLER_CAPABILITIES
        ]
        return csi_pb2.ControllerGetCapabilitiesResponse(capabilities=capabilities)

    def CreateSnapshot(  # noqa: N802
        self, request: csi_pb2.CreateSnapshotRequest, context: grpc.ServicerContext
    ) -> csi_pb2.CreateSnapshotResponse:
        def create() -> csi_pb2.CreateSnapshotResponse:
            _require(request.name, "name")
            _require(request.source_volume_id, "source_volume_id")
            if len(request.name.encode()) > MAX_NAME:
                raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, f"name is longer than {MAX_NAME} bytes")
            with self.store.lock:
                snapshot, _new = self.store.create_snapshot(request.name, request.source_volume_id)
            return csi_pb2.CreateSnapshotResponse(snapshot=_snapshot_message(snapshot))

        return _serve(context, "CreateSnapshot", create)

    def DeleteSnapshot(  # noqa: N802
        self, request: csi_pb2.DeleteSnapshotRequest, context: grpc.ServicerContext
    ) -> csi_pb2.DeleteSnapshotResponse:
        def delete() -> csi_pb2.DeleteSnapshotResponse:
            _require(request.snapshot_id, "snapshot_id")
            with self.store.lock:
                self.store.delete_snapshot(request.snapshot_id)
            return csi_pb2.DeleteSnapshotResponse()

        return _serve(context, "DeleteSnapshot", delete)

    def ListSnapshots(  # noqa: N802
        self, request: csi_pb2.ListSnapshotsRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ListSnapshotsResponse:
        def list_snapshots() -> csi_pb2.ListSnapshotsResponse:
            if request.max_entries < 0:
                raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, "max_entries is negative")
            with self.store.lock:
                snapshots = sorted(self.store.all_snapshots(), key=lambda s: (s.created, s.id))
            if request.snapshot_id:
                snapshots = [s for s in snapshots if s.id == request.snapshot_id]
            if request.source_volume_id:
                snapshots = [s for s in snapshots if s.source_volume == request.source_volume_id]
            start = 0
            if request.starting_token:
                if not request.starting_token.isdigit() or int(request.starting_token) > len(snapshots):
                    raise CsiError(
                        grpc.StatusCode.ABORTED, f"invalid starting_token {request.starting_token}"
                    )
                start = int(request.starting_token)
            end = start + request.max_entries if request.max_entries else len(snapshots)
            page = snapshots[start:end]
            entries = [csi_pb2.ListSnapshotsResponse.Entry(snapshot=_snapshot_message(s)) for s in page]
            next_token = str(end) if end < len(snapshots) else ""
            return csi_pb2.ListSnapshotsResponse(entries=entries, next_token=next_token)

        return _serve(context, "ListSnapshots", list_snapshots)

    def GetSnapshot(  # noqa: N802
        self, request: csi_pb2.GetSnapshotRequest, context: grpc.ServicerContext
    ) -> csi_pb2.GetSnapshotResponse:
        def get() -> csi_pb2.GetSnapshotResponse:
            _require(request.snapshot_id, "snapshot_id")
            with self.store.lock:
                found = self.store.find_snapshot(request.snapshot_id)
            if found is None:
                raise CsiError(grpc.StatusCode.NOT_FOUND, f"snapshot {request.snapshot_id} not found")
            return csi_pb2.GetSnapshotResponse(snapshot=_snapshot_message(found[1]))

        return _serve(context, "GetSnapshot", get)

    def ControllerExpandVolume(  # noqa: N802
        self, request: csi_pb2.ControllerExpandVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerExpandVolumeResponse:
        def expand() -> csi_pb2.ControllerExpandVolumeResponse:
            _require(request.volume_id, "volume_id")
            if not request.HasField("capacity_range"):
                raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, "capacity_range is required")
            capacity = round_capacity(
                request.capacity_range.required_bytes, request.capacity_range.limit_bytes
            )
            with self.store.lock:
                volume = self.store.expand_volume(request.volume_id, capacity)
            # A loop device re-reads its file's size on the node; a directory has nothing to do there.
            return csi_pb2.ControllerExpandVolumeResponse(
                capacity_bytes=volume.capacity, node_expansion_required=volume.block
            )

        return _serve(context, "ControllerExpandVolume", expand)

    # Not offered (not in ControllerGetCapabilities): no attach step, no listing, no capacity tracking.
    def ControllerPublishVolume(  # noqa: N802
        self, request: csi_pb2.ControllerPublishVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerPublishVolumeResponse:
        _unimplemented(context, "ControllerPublishVolume")
        return csi_pb2.ControllerPublishVolumeResponse()

    def ControllerUnpublishVolume(  # noqa: N802
        self, request: csi_pb2.ControllerUnpublishVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerUnpublishVolumeResponse:
        _unimplemented(context, "ControllerUnpublishVolume")
        return csi_pb2.ControllerUnpublishVolumeResponse()

    def ListVolumes(  # noqa: N802
        self, request: csi_pb2.ListVolumesRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ListVolumesResponse:
        _unimplemented(context, "ListVolumes")
        return csi_pb2.ListVolumesResponse()

    def GetCapacity(  # noqa: N802
        self, request: csi_pb2.GetCapacityRequest, context: grpc.ServicerContext
    ) -> csi_pb2.GetCapacityResponse:
        _unimplemented(context, "GetCapacity")
        return csi_pb2.GetCapacityResponse()

    def ControllerGetVolume(  # noqa: N802
        self, request: csi_pb2.ControllerGetVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerGetVolumeResponse:
        _unimplemented(context, "ControllerGetVolume")
        return csi_pb2.ControllerGetVolumeResponse()

    def ControllerModifyVolume(  # noqa: N802
        self, request: csi_pb2.ControllerModifyVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerModifyVolumeResponse:
        _unimplemented(context, "ControllerModifyVolume")
        return csi_pb2.ControllerModifyVolumeResponse()

    def ControllerGetVolumeHealth(  # noqa: N802
        self, request: csi_pb2.ControllerGetVolumeHealthRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerGetVolumeHealthResponse:
        _unimplemented(context, "ControllerGetVolumeHealth")
        return csi_pb2.ControllerGetVolumeHealthResponse()

    def ControllerListVolumeHealth(  # noqa: N802
        self, request: csi_pb2.ControllerListVolumeHealthRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerListVolumeHealthResponse:
        _unimplemented(context, "ControllerListVolumeHealth")
        return csi_pb2.ControllerListVolumeHealthResponse()

    def ControllerGetNodeInfo(  # noqa: N802
        self, request: csi_pb2.ControllerGetNodeInfoRequest, context: grpc.ServicerContext
    ) -> csi_pb2.ControllerGetNodeInfoResponse:
        _unimplemented(context, "ControllerGetNodeInfo")
        return csi_pb2.ControllerGetNodeInfoResponse()


class Node(csi_pb2_grpc.NodeServicer):
    def __init__(self, service: NodeService, node_id: str) -> None:
        self.service = service
        self.node_id = node_id

    def NodePublishVolume(  # noqa: N802
        self, request: csi_pb2.NodePublishVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodePublishVolumeResponse:
        def publish() -> csi_pb2.NodePublishVolumeResponse:
            _require(request.volume_id, "volume_id")
            _require(request.target_path, "target_path")
            if not request.HasField("volume_capability"):
                raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, "volume_capability is required")
            capabilities = [request.volume_capability]
            block = _wants_block(capabilities)
            with self.service.lock:
                self.service.publish(
                    request.volume_id,
                    request.target_path,
                    block=block,
                    readonly=request.readonly,
                    multi_node=_wants_multi_node(capabilities),
                )
            return csi_pb2.NodePublishVolumeResponse()

        return _serve(context, "NodePublishVolume", publish)

    def NodeUnpublishVolume(  # noqa: N802
        self, request: csi_pb2.NodeUnpublishVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeUnpublishVolumeResponse:
        def unpublish() -> csi_pb2.NodeUnpublishVolumeResponse:
            _require(request.volume_id, "volume_id")
            _require(request.target_path, "target_path")
            with self.service.lock:
                self.service.unpublish(request.volume_id, request.target_path)
            return csi_pb2.NodeUnpublishVolumeResponse()

        return _serve(context, "NodeUnpublishVolume", unpublish)

    def NodeGetVolumeStats(  # noqa: N802
        self, request: csi_pb2.NodeGetVolumeStatsRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeGetVolumeStatsResponse:
        def stats() -> csi_pb2.NodeGetVolumeStatsResponse:
            _require(request.volume_id, "volume_id")
            _require(request.volume_path, "volume_path")
            with self.service.lock:
                volume, used, available, inodes, inodes_free = self.service.stats(
                    request.volume_id, request.volume_path
                )
            Usage = csi_pb2.VolumeUsage  # noqa: N806
            usage = [Usage(unit=Usage.BYTES, total=volume.capacity, used=used, available=available)]
            if not volume.block:
                usage.append(
                    Usage(unit=Usage.INODES, total=inodes + inodes_free, used=inodes, available=inodes_free)
                )
            return csi_pb2.NodeGetVolumeStatsResponse(usage=usage)

        return _serve(context, "NodeGetVolumeStats", stats)

    def NodeExpandVolume(  # noqa: N802
        self, request: csi_pb2.NodeExpandVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeExpandVolumeResponse:
        def expand() -> csi_pb2.NodeExpandVolumeResponse:
            _require(request.volume_id, "volume_id")
            _require(request.volume_path, "volume_path")
            with self.service.lock:
                volume = self.service.expand(request.volume_id, request.volume_path)
            return csi_pb2.NodeExpandVolumeResponse(capacity_bytes=volume.capacity)

        return _serve(context, "NodeExpandVolume", expand)

    def NodeGetCapabilities(  # noqa: N802
        self, request: csi_pb2.NodeGetCapabilitiesRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeGetCapabilitiesResponse:
        capabilities = [
            csi_pb2.NodeServiceCapability(rpc=csi_pb2.NodeServiceCapability.RPC(type=kind))
            for kind in NODE_CAPABILITIES
        ]
        return csi_pb2.NodeGetCapabilitiesResponse(capabilities=capabilities)

    def NodeGetInfo(  # noqa: N802
        self, request: csi_pb2.NodeGetInfoRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeGetInfoResponse:
        return csi_pb2.NodeGetInfoResponse(node_id=self.node_id, accessible_topology=_topology(self.node_id))

    # No staging step (NodeGetCapabilities offers none): publishing is one bind mount.
    def NodeStageVolume(  # noqa: N802
        self, request: csi_pb2.NodeStageVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeStageVolumeResponse:
        _unimplemented(context, "NodeStageVolume")
        return csi_pb2.NodeStageVolumeResponse()

    def NodeUnstageVolume(  # noqa: N802
        self, request: csi_pb2.NodeUnstageVolumeRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeUnstageVolumeResponse:
        _unimplemented(context, "NodeUnstageVolume")
        return csi_pb2.NodeUnstageVolumeResponse()

    def NodeGetVolumeHealth(  # noqa: N802
        self, request: csi_pb2.NodeGetVolumeHealthRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeGetVolumeHealthResponse:
        _unimplemented(context, "NodeGetVolumeHealth")
        return csi_pb2.NodeGetVolumeHealthResponse()

    def NodeGetStorageHealth(  # noqa: N802
        self, request: csi_pb2.NodeGetStorageHealthRequest, context: grpc.ServicerContext
    ) -> csi_pb2.NodeGetStorageHealthResponse:
        _unimplemented(context, "NodeGetStorageHealth")
        return csi_pb2.NodeGetStorageHealthResponse()


def serve_unix(socket: Path, register: Callable[[grpc.Server], None], workers: int = 8) -> grpc.Server:
    """A started gRPC server on the unix socket ``socket`` (a stale socket file is replaced)."""
    socket.parent.mkdir(parents=True, exist_ok=True)
    socket.unlink(missing_ok=True)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    register(server)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    return server


def csi_server(
    socket: Path, *, store: Store | None = None, node: NodeService | None = None, node_id: str = ""
) -> grpc.Server:
    """The driver's services on ``socket``: Identity, the Controller with a ``store``, the Node with a
    ``node`` service."""

    def register(server: grpc.Server) -> None:
        csi_pb2_grpc.add_IdentityServicer_to_server(Identity(controller=store is not None), server)
        if store is not None:
            csi_pb2_grpc.add_ControllerServicer_to_server(Controller(store), server)
        if node is not None:
            csi_pb2_grpc.add_NodeServicer_to_server(Node(node, node_id), server)

    return serve_unix(socket, register)
