"""python -m localcluster.csi --endpoint SOCKET [--controller NODE=DIR ...] [--node NODE --data-dir DIR
                            [--registration-dir DIR]] [--shared-dir DIR]

Serves the hostpath CSI driver on the unix socket SOCKET until SIGTERM: the Controller service over the
given nodes' data directories, the Node service of NODE over its data directory DIR, or both. With
--registration-dir (the kubelet's plugins_registry) the node plugin registers itself with the kubelet.
With --shared-dir (the same directory for the controller and every node) volumes with multi-node access
modes are made there and published on any node; without it they are refused.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import grpc

from .driver import csi_server
from .node import NodeService
from .registration import Registration, registration_server
from .store import DataDir, Store


def _node_dir(value: str) -> tuple[str, Path]:
    name, sep, directory = value.partition("=")
    if not sep or not name or not directory:
        raise argparse.ArgumentTypeError(f"{value!r}: expected NODE=DIR")
    return name, Path(directory)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster.csi", description=__doc__)
    parser.add_argument("--endpoint", type=Path, required=True, help="the CSI unix socket to serve")
    parser.add_argument("--controller", type=_node_dir, action="append", default=[], metavar="NODE=DIR")
    parser.add_argument("--node", default="", help="serve the Node service as this node")
    parser.add_argument("--data-dir", type=Path, help="the node's data directory")
    parser.add_argument("--registration-dir", type=Path, help="register with the kubelet through this dir")
    parser.add_argument("--shared-dir", type=Path, help="the data directory of multi-node volumes")
    args = parser.parse_args(argv)
    if not args.controller and not args.node:
        parser.error("give --controller, --node or both")
    if args.node and args.data_dir is None:
        parser.error("--node needs --data-dir")
    if args.shared_dir is not None and args.node and args.shared_dir.resolve() == args.data_dir.resolve():
        parser.error("--shared-dir and --data-dir are the same directory")
    try:
        store = Store(dict(args.controller), shared=args.shared_dir) if args.controller else None
    except ValueError as error:  # the shared directory is a node's
        parser.error(str(error))
    shared = DataDir(args.shared_dir) if args.shared_dir is not None and args.node else None
    node = NodeService(DataDir(args.data_dir), shared=shared) if args.node else None
    servers: list[grpc.Server] = [csi_server(args.endpoint, store=store, node=node, node_id=args.node)]
    sockets = [args.endpoint]
    if args.registration_dir is not None:
        registration = Registration(args.endpoint)
        servers.append(registration_server(args.registration_dir, registration))
        sockets.append(args.registration_dir / f"{registration.driver}-reg.sock")
    print(f"serving on {', '.join(map(str, sockets))}", file=sys.stderr, flush=True)

    stopped = threading.Event()

    def stop(_signal: int, _frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    stopped.wait()
    # The registration socket goes first: the kubelet then deregisters the driver.
    for server in reversed(servers):
        server.stop(grace=2).wait()
    for socket in sockets:
        socket.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
