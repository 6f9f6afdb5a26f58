"""PID 1 of a second node's namespaces: puts the node's own directories over the host's, then reaps.

Started by ``unshare`` in fresh PID, mount (a slave of the host's) and network namespaces; the node's
containerd, kubelet and kube-proxy join all three. virt-handler (a hostPID pod) sees this process as PID 1
and does its node-side mounts in its mount namespace, so they land on this node. When it ends, the kernel
kills everything in its PID namespace and the namespaces go with it.

python -m localcluster.nodeinit '{"mounts": [[source, target, shared], ...], "ready": path}'
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from localcluster.hostfs import unmount_all


def _mount(*argv: str) -> None:
    result = subprocess.run(["mount", *argv], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"mount {' '.join(argv)}: {result.stderr.strip()}")


def bind(source: Path, target: Path, *, shared: bool) -> None:
    """``source`` over ``target`` in this mount namespace only. The copies of what the host mounted at or
    below ``target`` are unmounted here first (only here: they are slaves): hidden under the new mount
    they would still be listed at the same mount points, and a runtime looking up a host path's mount
    (to check that it is shared) could find the host's copy instead; nor should node 1's pods' mounts
    show through."""
    source.mkdir(parents=True, exist_ok=True)
    unmount_all(target)
    target.mkdir(parents=True, exist_ok=True)
    _mount("--bind", str(source), str(target))
    # Shared: the kubelet allows Bidirectional propagation only from shared mounts.
    _mount("--make-rshared" if shared else "--make-rprivate", str(target))


def _stop(_signal: int, _frame: FrameType | None) -> None:
    sys.exit(0)


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    for source, target, shared in spec["mounts"]:
        bind(Path(source), Path(target), shared=bool(shared))
    # A node's root is a shared mount (systemd makes it so); here it stays a slave of the host's too, so
    # what the node mounts never shows on the host. Only after the binds: bound from a shared /, they
    # would join its peer group and every mount below them would show twice.
    _mount("--make-shared", "/")
    Path(spec["ready"]).write_text(f"{os.getpid()}\n")
    # PID 1 gets no signal it has no handler for.
    signal.signal(signal.SIGTERM, _stop)
    while True:
        try:
            os.waitpid(-1, 0)  # orphans (containerd's shims, containers' leftovers) are ours to reap
        except ChildProcessError:
            time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
