"""The CirrOS- and Alpine-compatible test guests boot from their disk (as their containerDisks serve it)
through virt-launcher on real QEMU/TCG in 128Mi, and answer KubeVirt's scripted console logins for CirrOS
and Alpine on the launcher's serial socket. The seconds to the login prompt are printed (8 to 13 s on an idle
2-CPU machine, the 15 s the guests are built for); the test fails only on a hang, since a loaded CI machine
stretches TCG boots.

One boot per guest: CirrOS-compatible with NoCloud (hostname from ``local-hostname``), Alpine-compatible
with ConfigDrive (hostname from ``meta_data.json``); each runs its user data; ``poweroff`` stops the first,
its i6300esb watchdog the second. Then a CirrOS-compatible guest soft-rebooted through its ACPI power button
(the launcher's SoftRebootVirtualMachine, as KubeVirt's soft reboot without a guest agent): like CirrOS it
keeps a boot record per boot on its (containerDisk) disk, which KubeVirt's soft-reboot spec counts.

The Fedora-compatible guest answers KubeVirt's scripted Fedora login (fedora/fedora, then ``sudo su``) and
its QEMU guest agent answers through libvirt's agent channel: the OS, host name, users, file systems (its
data file system frozen and thawed, a write blocked in between), the commands its user data disabled,
``systemctl stop``/``start`` of the agent, and a shutdown through the agent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libvirt
import libvirt_qemu
import pytest
from localcluster import testguest

from kubevirt_testing.guest_console import (
    POWEROFF_MESSAGE,
    PROMPT,
    Expecter,
    SocketStream,
    configure_console,
    login_to_alpine,
    login_to_cirros,
    run,
)

pytestmark = pytest.mark.timeout(240)

# From the domain's start (QEMU's, SeaBIOS, syslinux, the kernel) to the login prompt: a hang, not slowness.
BOOT_LIMIT = 90.0
USER_DATA_MARKER = "USER-DATA-OF-THE-COMPATIBLE-GUEST"


@pytest.fixture(scope="module")
def guests() -> dict[str, testguest.TestGuest]:
    cache = Path(os.environ.get("KUBEVIRT_CACHE", "/var/cache/kubevirt-py"))
    flavours = (testguest.CIRROS_COMPATIBLE, testguest.ALPINE_COMPATIBLE, testguest.FEDORA_COMPATIBLE)
    return testguest.build_all(cache, flavours)


def disk_boot_vmi(make_vmi: Any, name: str, cloud_init: dict[str, Any]) -> dict[str, Any]:
    """The guest's disk as the first (container) disk, a cloud-init disk, no kernel boot, 128Mi."""
    vmi: dict[str, Any] = make_vmi(name)
    del vmi["spec"]["domain"]["firmware"]["kernelBoot"]
    vmi["spec"]["volumes"] = [
        {"name": "containerdisk", "containerDisk": {"image": "registry.invalid/guest:1"}},
        {"name": "cloudinitdisk", **cloud_init},
    ]
    vmi["spec"]["domain"]["devices"]["disks"] = [
        {"name": "containerdisk", "disk": {"bus": "virtio"}},
        {"name": "cloudinitdisk", "disk": {"bus": "virtio"}},
    ]
    return vmi


@pytest.fixture
def booted(launcher_pods: Any, tmp_path: Path) -> Iterator[Any]:
    """Boots (guest, vmi); yields the serial console's Expecter and the seconds until the login prompt."""
    connections: list[socket.socket] = []

    def boot(guest: testguest.TestGuest, vmi: dict[str, Any]) -> tuple[Expecter, float, Any]:
        # What virt-handler would bind-mount from the containerDisk image.
        image = tmp_path / "pod" / "share" / "container-disks" / "disk_0.img"
        image.parent.mkdir(parents=True)
        shutil.copyfile(guest.disk, image)
        pod = launcher_pods(vmi)
        began = time.monotonic()
        pod.client.sync_vmi(vmi)  # returns once the domain runs
        started = time.monotonic()
        print(f"{vmi['metadata']['name']}: domain defined and started in {started - began:.1f} s")
        serial = pod.in_pod(f"/var/run/kubevirt-private/{pod.uid}/virt-serial0")
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(str(serial))
        connections.append(connection)
        expecter = Expecter(SocketStream(connection))
        expecter.expect("test guest ready", 60)  # reading the console drains it (see the soft reboot below)
        expecter.send("\n")
        expecter.expect(" login: ", 30)
        return expecter, time.monotonic() - started, pod

    yield boot
    for connection in connections:
        connection.close()


def test_cirros_compatible_guest_logs_in_like_cirros(guests: Any, make_vmi: Any, booted: Any) -> None:
    user_data = f"#!/bin/sh\necho {USER_DATA_MARKER} as $(id -un)\n"
    vmi = disk_boot_vmi(make_vmi, "cirros-like", {"cloudInitNoCloud": {"userData": user_data}})
    vmi["spec"]["hostname"] = "cirros-host"
    expecter, boot_seconds, pod = booted(guests[testguest.CIRROS_COMPATIBLE.name], vmi)
    print(f"CirrOS-compatible guest: login prompt {boot_seconds:.1f} s after the domain started")
    assert boot_seconds <= BOOT_LIMIT

    login_to_cirros(expecter, "cirros-host")
    assert f"{USER_DATA_MARKER} as root" in pod.serial_text()
    assert run(expecter, "id -un") == "cirros"
    assert run(expecter, "sudo id -un") == "root"
    assert run(expecter, "hostname") == "cirros-host"
    for tool in ("ping", "nc"):
        assert run(expecter, f"which {tool}").endswith(f"/{tool}")
    assert "1 packets received" in run(expecter, "ping -c 1 127.0.0.1")  # as the user, like CirrOS
    # KubeVirt's network specs: a persistent netcat server (CirrOS's -k), then clients that reach it twice.
    run(expecter, 'nc -klp 8080 -e echo -e "Hello World!" &')
    for _ in range(2):
        assert run(expecter, "echo test | nc 127.0.0.1 8080 -i 1 -w 1") == "Hello World!"
    assert "can't connect" in run(expecter, "echo test | nc 127.0.0.1 8081 -i 1 -w 1 2>&1")

    expecter.send("sudo poweroff\n")
    expecter.expect(POWEROFF_MESSAGE, 30)
    deadline = time.monotonic() + 60
    while pod.status()[0] != "Shutoff":
        assert time.monotonic() < deadline, f"the guest did not power off: {pod.status()}"
        time.sleep(0.5)


def test_alpine_compatible_guest_logs_in_like_alpine(guests: Any, make_vmi: Any, booted: Any) -> None:
    user_data = f"#!/bin/sh\necho {USER_DATA_MARKER}\n"
    vmi = disk_boot_vmi(make_vmi, "alpine-like", {"cloudInitConfigDrive": {"userData": user_data}})
    vmi["spec"]["domain"]["devices"]["watchdog"] = {"name": "wd", "i6300esb": {"action": "poweroff"}}
    expecter, boot_seconds, pod = booted(guests[testguest.ALPINE_COMPATIBLE.name], vmi)
    print(f"Alpine-compatible guest: login prompt {boot_seconds:.1f} s after the domain started")
    assert boot_seconds <= BOOT_LIMIT

    login_to_alpine(expecter, "alpine-like")  # ConfigDrive names the VMI
    assert USER_DATA_MARKER in pod.serial_text()
    assert run(expecter, "hostname") == "alpine-like"
    assert run(expecter, "id -u") == "0"
    run(expecter, "cd /tmp")
    expecter.send("cd\n")
    expecter.expect(r"alpine-like:~\# ", 30)

    # KubeVirt's watchdog spec: a watchdog daemon killed without stopping the timer powers the guest off.
    expecter.send("watchdog -t 2000ms -T 4000ms /dev/watchdog && sleep 5 && killall -9 watchdog\n")
    expecter.expect(r"alpine-like:~\# ", 30)
    assert run(expecter, "echo $?") == "0"
    deadline = time.monotonic() + 60
    while pod.status()[0] != "Shutoff":
        assert time.monotonic() < deadline, f"the watchdog did not power the guest off: {pod.status()}"
        time.sleep(0.5)


def boot_records(expecter: Expecter) -> str:
    """What KubeVirt's soft-reboot spec counts (it expects 2 after one reboot)."""
    return run(expecter, "last reboot | grep reboot | wc -l")


@pytest.mark.timeout(420)
def test_cirros_compatible_guest_keeps_a_boot_record_per_boot(
    guests: Any, make_vmi: Any, booted: Any
) -> None:
    vmi = disk_boot_vmi(make_vmi, "cirros-reboot", {"cloudInitNoCloud": {"userData": "#!/bin/sh\n"}})
    expecter, boot_seconds, pod = booted(guests[testguest.CIRROS_COMPATIBLE.name], vmi)
    print(f"CirrOS-compatible guest: login prompt {boot_seconds:.1f} s after the domain started")
    login_to_cirros(expecter, "cirros-reboot")
    assert boot_records(expecter) == "1"
    assert run(expecter, "last reboot").splitlines()[0].split()[:3] == ["reboot", "system", "boot"]

    # libvirt's reboot with the ACPI power-button flag: the guest powers off, libvirt resets it, QEMU (and
    # the containerDisk's writable overlay) stay.
    rebooted = time.monotonic()
    pod.client.vmi_command("SoftRebootVirtualMachine", vmi)
    # As CirrOS's, the guest shuts down through init: a command typed right after the press still runs
    # (KubeVirt's spec sends its 'last reboot' then, and reads the count from the output that follows).
    assert "still-here" in run(expecter, "echo still-here").splitlines()
    # The second boot, read on the console the test kept: the console socket must be drained while
    # waiting, or QEMU stops taking the guest's serial output once the socket's buffer is full.
    expecter.expect("test guest ready", BOOT_LIMIT)
    expecter.send("\n")
    expecter.expect(" login: ", 30)
    print(f"CirrOS-compatible guest: login prompt {time.monotonic() - rebooted:.1f} s after the soft reboot")
    assert "power button pressed" in pod.serial_text()
    assert pod.status()[0] == "Running"
    login_to_cirros(expecter, "cirros-reboot")
    assert boot_records(expecter) == "2"


def login_to_fedora(expecter: Expecter, hostname: str, timeout: float = 120.0) -> None:
    """KubeVirt's Fedora exchange: ``<host> login: ``, ``fedora``/``fedora``, the ``[fedora@<host> ~]$ ``
    prompt, then ``sudo su`` to root's ``[root@<host> fedora]# ``; then the console set up."""
    host = f"(localhost|fedora|{re.escape(hostname)})"
    expecter.send("\n")
    expecter.expect(host + " login: ", timeout)
    expecter.send("fedora\n")
    expecter.expect("Password:", timeout)
    expecter.send("fedora\n")
    expecter.expect(rf"\[fedora@{host} ~\]\$ ", timeout)
    expecter.send("sudo su\n")
    expecter.expect(rf"\[root@{host} fedora\]\# ", timeout)
    configure_console(expecter, sudo=False)


def agent_command(pod: Any, command: str, arguments: dict[str, Any] | None = None, timeout: int = 30) -> Any:
    """What the guest agent returns for ``command``, sent through the launcher's libvirt (whose agent
    channel the domain's org.qemu.guest_agent.0 port is)."""
    connection = libvirt.open(f"qemu+unix:///system?socket={pod.libvirt_socket}")
    try:
        (domain,) = connection.listAllDomains()
        message = {"execute": command, **({"arguments": arguments} if arguments is not None else {})}
        return json.loads(libvirt_qemu.qemuAgentCommand(domain, json.dumps(message), timeout, 0))["return"]
    finally:
        connection.close()


def wait_for_agent(pod: Any, timeout: float = 60.0) -> float:
    """Seconds until the guest agent answered guest-ping."""
    began = time.monotonic()
    while True:
        try:
            agent_command(pod, "guest-ping", timeout=5)
            return time.monotonic() - began
        except libvirt.libvirtError as err:
            if time.monotonic() - began > timeout:
                raise AssertionError(f"the guest agent did not answer in {timeout:.0f} s") from err
            time.sleep(1)


@pytest.mark.timeout(420)
def test_fedora_compatible_guest_logs_in_and_its_agent_answers(
    guests: Any, make_vmi: Any, booted: Any
) -> None:
    # KubeVirt's user data that disables agent commands (GetFedoraToolsGuestAgentBlacklistUserData).
    user_data = (
        '#!/bin/bash\n echo -e "\\n\\nBLACKLIST_RPC=guest-exec" | sudo tee -a /etc/sysconfig/qemu-ga\n'
    )
    vmi = disk_boot_vmi(make_vmi, "fedora-like", {"cloudInitNoCloud": {"userData": user_data}})
    vmi["spec"]["hostname"] = "fedora-host"
    expecter, boot_seconds, pod = booted(guests[testguest.FEDORA_COMPATIBLE.name], vmi)
    print(f"Fedora-compatible guest: login prompt {boot_seconds:.1f} s after the domain started")
    assert boot_seconds <= BOOT_LIMIT

    login_to_fedora(expecter, "fedora-host")
    assert run(expecter, "hostname") == "fedora-host"
    assert run(expecter, "id -un") == "root"
    print(f"guest agent: answered {wait_for_agent(pod):.1f} s after the login")

    assert agent_command(pod, "guest-get-osinfo")["id"] == "fedora"
    assert agent_command(pod, "guest-get-osinfo")["name"] == "Fedora Linux"
    assert agent_command(pod, "guest-get-host-name") == {"host-name": "fedora-host"}
    assert "fedora" in [user["user"] for user in agent_command(pod, "guest-get-users")]
    assert agent_command(pod, "guest-get-timezone")["zone"]
    first, *_ = agent_command(pod, "guest-get-fsinfo")
    assert (first["mountpoint"], first["type"]) == (testguest.DATA_MOUNT, "ext4")
    assert first["disk"][0]["bus-type"] == "virtio"
    commands = {
        entry["name"]: entry["enabled"] for entry in agent_command(pod, "guest-info")["supported_commands"]
    }
    assert commands["guest-exec"] is False  # the user data's BLACKLIST_RPC
    assert commands["guest-ssh-add-authorized-keys"] is True

    # Frozen, the data file system holds a write until it is thawed.
    assert agent_command(pod, "guest-fsfreeze-freeze") >= 1
    assert agent_command(pod, "guest-fsfreeze-status") == "frozen"
    expecter.send(f"echo written > {testguest.DATA_MOUNT}/file; echo WROTE-$((40 + 2))\n")
    with pytest.raises(AssertionError):
        expecter.expect("WROTE-42", 5)
    assert agent_command(pod, "guest-fsfreeze-thaw") >= 1
    expecter.expect("WROTE-42", 30)
    expecter.expect(PROMPT, 30)
    assert run(expecter, f"cat {testguest.DATA_MOUNT}/file") == "written"

    # KubeVirt's specs stop and start the agent as on Fedora.
    run(expecter, "systemctl stop qemu-guest-agent")
    assert run(expecter, "systemctl is-active qemu-guest-agent") == "inactive"
    with pytest.raises(libvirt.libvirtError):
        agent_command(pod, "guest-ping", timeout=5)
    run(expecter, "systemctl start qemu-guest-agent")
    wait_for_agent(pod)

    # A shutdown through the agent (libvirt's guest-agent mode), as KubeVirt's with an agent connected.
    connection = libvirt.open(f"qemu+unix:///system?socket={pod.libvirt_socket}")
    try:
        (domain,) = connection.listAllDomains()
        domain.shutdownFlags(libvirt.VIR_DOMAIN_SHUTDOWN_GUEST_AGENT)
    finally:
        connection.close()
    expecter.expect(POWEROFF_MESSAGE, 60)
    deadline = time.monotonic() + 60
    while pod.status()[0] != "Shutoff":
        assert time.monotonic() < deadline, f"the guest did not power off: {pod.status()}"
        time.sleep(0.5)
