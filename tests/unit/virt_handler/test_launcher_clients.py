"""The per-VMI launcher clients virt-handler keeps: reused while they fit, dialled again (with every check)
when the pod or its socket changed, closed when dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubevirt.handler_launcher_com.cmd.client import CommandFailedError, LauncherClient, go_quote
from kubevirt.virt_handler.launcher_clients import LauncherClients
from kubevirt.virt_handler.pod_sockets import PodSocketError, connect_launcher, launcher_socket_identity
from kubevirt_testing.launcher_socket import launcher_socket


class Client:
    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _clients(identities: dict[Path, object]) -> tuple[LauncherClients[Client], list[Client]]:
    dialled: list[Client] = []

    def connect(socket: Path) -> Client:
        dialled.append(Client(socket))
        return dialled[-1]

    def identify(socket: Path) -> object:
        identity = identities[socket]
        if isinstance(identity, Exception):
            raise identity
        return identity

    return LauncherClients(connect, identify), dialled


def test_a_client_is_kept_while_path_and_socket_stay() -> None:
    a, b = Path("/pods/a/sock"), Path("/pods/b/sock")
    identities: dict[Path, object] = {a: 1, b: 2}
    clients, dialled = _clients(identities)
    first = clients.get("vmi", a)
    assert clients.get("vmi", a) is first
    identities[a] = 3  # the launcher made its socket again
    second = clients.get("vmi", a)
    assert first.closed
    assert second is not first
    third = clients.get("vmi", b)  # another pod
    assert second.closed
    assert third.socket == b
    assert len(dialled) == 3
    assert len(clients) == 1


def test_a_refused_socket_drops_the_kept_client() -> None:
    a = Path("/pods/a/sock")
    identities: dict[Path, object] = {a: 1}
    clients, _ = _clients(identities)
    first = clients.get("vmi", a)
    identities[a] = PodSocketError("refused, a link")
    with pytest.raises(PodSocketError):
        clients.get("vmi", a)
    assert first.closed
    assert len(clients) == 0


def test_drop_closes_only_the_client_named() -> None:
    a = Path("/pods/a/sock")
    identities: dict[Path, object] = {a: 1}
    clients, _ = _clients(identities)
    first = clients.get("vmi", a)
    identities[a] = 2
    second = clients.get("vmi", a)
    clients.drop("vmi", first)  # a worker done with a client already replaced
    assert not second.closed
    clients.get("other", a)
    clients.drop_all_but(["other"])
    assert second.closed
    assert len(clients) == 1
    clients.close()
    assert len(clients) == 0


def test_the_real_client_pins_the_socket_it_dialled(tmp_path: Path) -> None:
    clients: LauncherClients[LauncherClient] = LauncherClients(connect_launcher, launcher_socket_identity)
    with launcher_socket(tmp_path, "pod-1", listening=False) as socket:
        first = clients.get("vmi", socket)
        assert clients.get("vmi", socket) is first
    socket.unlink()
    with launcher_socket(tmp_path, "pod-1", listening=False):
        # The first client holds the old socket open: the new one cannot be taken for it.
        second = clients.get("vmi", socket)
    assert second is not first
    assert first._path_fd is None  # closed, with the descriptor it held
    clients.close()
    assert second._path_fd is None


def test_a_failed_command_is_worded_as_kubevirts_client_words_it() -> None:
    """KubeVirt: ``fmt.Errorf("server error. command %s failed: %q", "SyncVMI", message)``."""
    lock = (
        'internal error: qemu-kvm: Failed to get "write" lock\n'
        "Is another process using the image [/var/run/kubevirt-private/vmi-disks/disk0/disk.img]?"
    )
    failed = CommandFailedError("SyncVirtualMachine", lock)
    assert str(failed) == (
        'server error. command SyncVMI failed: "internal error: qemu-kvm: Failed to get \\"write\\" lock\\n'
        'Is another process using the image [/var/run/kubevirt-private/vmi-disks/disk0/disk.img]?"'
    )
    assert (failed.command, failed.reason) == ("SyncVirtualMachine", lock)
    assert (
        str(CommandFailedError("SyncMigrationTarget", "x"))
        == 'server error. command SyncMigrationTarget failed: "x"'
    )
    assert go_quote("tab\t\\ bell\a é \u200b \U0001f600 \x00") == '"tab\\t\\\\ bell\\a é \\u200b 😀 \\x00"'
