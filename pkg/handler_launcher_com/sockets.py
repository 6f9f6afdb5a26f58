"""Where the handler <-> launcher sockets live, relative to the launcher's share directory.

Inside a launcher pod the share directory is ``/var/run/kubevirt``; virt-handler reaches the same files
through the pod's ``sockets`` emptyDir and mount root.
"""

from __future__ import annotations

from pathlib import Path

from kubevirt import pod_paths

DEFAULT_SHARE_DIR = Path(pod_paths.VIRT_SHARE_DIR)
SOCKETS_DIR = pod_paths.SOCKETS
INIT_SOCKET = "launcher-init-sock"
READY_SOCKET = "launcher-sock"
UNRESPONSIVE_MARKER = "launcher-unresponsive"
NOTIFY_PIPE_SOCKET = "domain-notify-pipe.sock"
LEGACY_NOTIFY_SOCKET = "domain-notify.sock"
MIGRATION_PROXY_DIR = "migrationproxy"


def init_socket_path(share_dir: Path) -> Path:
    """The command socket while the launcher is still starting."""
    return share_dir / SOCKETS_DIR / INIT_SOCKET


def cmd_socket_path(share_dir: Path) -> Path:
    """The command socket once the launcher is ready (the name virt-handler looks for)."""
    return share_dir / SOCKETS_DIR / READY_SOCKET


def notify_socket_path(share_dir: Path) -> Path:
    """The socket the launcher dials for domain events: the legacy name wins when it exists."""
    legacy = share_dir / LEGACY_NOTIFY_SOCKET
    return legacy if legacy.exists() else share_dir / NOTIFY_PIPE_SOCKET


def migration_source_socket(share_dir: Path, key: str) -> Path:
    """The unix socket virt-handler's migration proxy serves on the source for one migration."""
    return share_dir / MIGRATION_PROXY_DIR / f"{key}-source.sock"


def grpc_target(path: Path) -> str:
    """A gRPC channel target for a unix socket path."""
    return f"unix://{path.absolute()}"


# Inside the launcher pod: libvirt's socket (the migration target's libvirt connection ends here) and
# the directory of the migration proxy sockets.
LAUNCHER_LIBVIRT_SOCKET_DIR = pod_paths.LIBVIRT_SOCKET_DIR
LAUNCHER_LIBVIRT_SOCKET = "libvirt-sock"
LAUNCHER_MIGRATION_PROXY_DIR = f"{DEFAULT_SHARE_DIR}/{MIGRATION_PROXY_DIR}"


def migration_proxy_key(vmi_uid: str, port: int | str) -> str:
    """The proxy key of a direct migration port (``<uid>-49152``); port 0 is libvirt's, keyed by UID."""
    return vmi_uid if str(port) == "0" else f"{vmi_uid}-{port}"
