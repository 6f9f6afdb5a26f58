"""``virtctl addvolume`` / ``removevolume``: the source it picks, the body and path it sends (as KubeVirt's
virtctl via client-go), its checks and messages, and its retries of a lost race."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest
from click.testing import CliRunner

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, ApiError, InvalidError, NotFoundError, Resource
from kubevirt.client.resources import DATA_VOLUMES
from kubevirt.virtctl import volumes
from kubevirt.virtctl.root import root

VM = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm"
VMI = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm"
CONCURRENT = "the server rejected our request due to an error in our request"


class FakeClient:
    """Holds some DataVolumes and claims; answers PUTs with the queued failures, then success."""

    def __init__(self, data_volumes: Collection[str] = (), claims: Collection[str] = ()) -> None:
        self.objects = {DATA_VOLUMES.plural: set(data_volumes), PERSISTENT_VOLUME_CLAIMS.plural: set(claims)}
        self.failures: list[ApiError] = []
        self.gets: list[tuple[str, str, str]] = []
        self.puts: list[tuple[str, Any]] = []

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any]:
        self.gets.append((resource.plural, namespace, name))
        if name not in self.objects.get(resource.plural, set()):
            raise NotFoundError(404, "NotFound", f'{resource.plural} "{name}" not found')
        return {"metadata": {"name": name}}

    def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> bytes:
        assert method == "PUT"
        self.puts.append((path, body))
        if self.failures:
            raise self.failures.pop(0)
        return b""


def run(client: FakeClient, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    monkeypatch.setattr(volumes, "connect", lambda _flags: (client, "ns"))
    monkeypatch.setattr(volumes.time, "sleep", lambda _seconds: None)
    return CliRunner().invoke(root, list(args))


def disk(serial: str = "data", **target: Any) -> dict[str, Any]:
    return {"name": "", **(target or {"disk": {"bus": "scsi"}}), "serial": serial}


def test_a_data_volume_of_the_volumes_name_is_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient(data_volumes={"data"}, claims={"data"})
    result = run(client, monkeypatch, "addvolume", "vm", "--volume-name=data")
    assert result.exit_code == 0, result.output
    assert result.stdout == "Successfully submitted add volume request to VM vm for volume data\n"
    assert client.gets == [("datavolumes", "ns", "data")]
    assert client.puts == [
        (
            f"{VMI}/addvolume",
            {
                "name": "data",
                "disk": disk(),
                "volumeSource": {"dataVolume": {"name": "data", "hotpluggable": True}},
            },
        )
    ]


def test_without_a_data_volume_the_claim_is_the_source_and_persist_goes_to_the_vm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = FakeClient(claims={"data"})
    args = ["addvolume", "vm", "--volume-name", "data", "--persist", "--serial", "S1", "--cache", "none"]
    result = run(client, monkeypatch, *args, "--bus", "virtio", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "Dry Run execution\nSuccessfully submitted add volume request to VM vm for volume data\n"
    )
    assert [get[0] for get in client.gets] == ["datavolumes", "persistentvolumeclaims"]
    assert client.puts == [
        (
            f"{VM}/addvolume",
            {
                "name": "data",
                "disk": {"name": "", "disk": {"bus": "virtio"}, "serial": "S1", "cache": "none"},
                "volumeSource": {"persistentVolumeClaim": {"claimName": "data", "hotpluggable": True}},
                "dryRun": ["All"],
            },
        )
    ]


def test_a_lun_on_scsi(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient(claims={"data"})
    result = run(client, monkeypatch, "addvolume", "vm", "--volume-name=data", "--disk-type=lun")
    assert result.exit_code == 0, result.output
    assert client.puts[0][1]["disk"] == disk(lun={"bus": "scsi"})


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--volume-name=absent"],
            "error adding volume, Volume absent is not a DataVolume or PersistentVolumeClaim",
        ),
        (["--bus=sata"], "Invalid bus type 'sata' for disk. Only 'scsi' and 'virtio' are supported."),
        (
            ["--disk-type=lun", "--bus=virtio"],
            "Invalid bus type 'virtio' for LUN disk. Only 'scsi' bus is supported.",
        ),
        (["--disk-type=cdrom"], "Invalid disk type 'cdrom'. Only LUN and Disk are supported."),
        (["--cache=unsafe"], "error adding volume, invalid cache value unsafe"),
    ],
)
def test_refused_before_sending(monkeypatch: pytest.MonkeyPatch, flags: list[str], message: str) -> None:
    client = FakeClient(claims={"data"})
    name = [] if any(flag.startswith("--volume-name") for flag in flags) else ["--volume-name=data"]
    result = run(client, monkeypatch, "addvolume", "vm", *name, *flags)
    assert (result.exit_code, result.stderr) == (1, message + "\n")
    assert client.puts == []


def test_the_volume_name_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(FakeClient(), monkeypatch, "removevolume", "vm")
    assert result.exit_code == 2
    assert "--volume-name" in result.stderr


def test_remove_sends_the_name_to_the_vmi_or_with_persist_to_the_vm(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient()
    result = run(client, monkeypatch, "removevolume", "vm", "--volume-name=data")
    assert result.stdout == "Successfully submitted remove volume request to VM vm for volume data\n"
    result = run(client, monkeypatch, "removevolume", "vm", "--volume-name=data", "--persist", "--dry-run")
    assert result.stdout.startswith("Dry Run execution\n")
    assert client.puts == [
        (f"{VMI}/removevolume", {"name": "data"}),
        (f"{VM}/removevolume", {"name": "data", "dryRun": ["All"]}),
    ]
    assert client.gets == []  # removing looks nothing up


def test_a_lost_race_is_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient(claims={"data"})
    client.failures = [InvalidError(422, "Invalid", CONCURRENT)] * 3
    result = run(client, monkeypatch, "addvolume", "vm", "--volume-name=data")
    assert result.exit_code == 0, result.output
    assert len(client.puts) == 4


def test_fifteen_lost_races_give_up(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient()
    client.failures = [InvalidError(422, "Invalid", CONCURRENT)] * 20
    result = run(client, monkeypatch, "removevolume", "vm", "--volume-name=data")
    assert (result.exit_code, result.stderr) == (1, "error removing volume after 15 retries\n")
    assert len(client.puts) == 15


def test_any_other_refusal_ends_at_once_with_the_servers_message(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient(claims={"data"})
    why = 'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "vm": VMI is not running'
    client.failures = [ApiError(409, "Conflict", why)]
    result = run(client, monkeypatch, "addvolume", "vm", "--volume-name=data")
    assert (result.exit_code, result.stderr) == (1, f"error adding volume, {why}\n")
    assert len(client.puts) == 1
