"""``virtctl create vm`` access credentials and cloud-init, as KubeVirt's virtctl writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubevirt.virtctl.root import root


def create(*args: str) -> tuple[int, dict[str, Any] | None, str]:
    result = CliRunner().invoke(root, ["create", "vm", "--name", "vm1", *args])
    return result.exit_code, yaml.safe_load(result.stdout) if result.exit_code == 0 else None, result.stderr


def volumes(vm: dict[str, Any] | None) -> list[dict[str, Any]]:
    assert vm is not None
    return list(vm["spec"]["template"]["spec"].get("volumes", []))


def test_user_password_and_keys_make_the_user_data(tmp_path: Path) -> None:
    password = tmp_path / "pw"
    password.write_text("s3cret\n")
    code, vm, err = create(
        "--user", "fedora", "--password-file", str(password), "--ssh-key", "ssh-rsa A,ssh-rsa B"
    )
    assert code == 0
    assert err == "WARNING: --password-file: The password is stored in cleartext in the VM definition!\n"
    assert volumes(vm) == [
        {
            "name": "cloudinitdisk",
            "cloudInitNoCloud": {
                "userData": "#cloud-config\nuser: fedora\npassword: s3cret\nchpasswd: { expire: False }\n"
                "ssh_authorized_keys:\n  - ssh-rsa A\n  - ssh-rsa B"
            },
        }
    ]


def test_given_user_data_and_config_drive() -> None:
    code, vm, _ = create("--cloud-init", "configdrive", "--cloud-init-user-data", "I2Nsb3VkLWNvbmZpZw==")
    assert code == 0
    assert volumes(vm) == [
        {"name": "cloudinitdisk", "cloudInitConfigDrive": {"userDataBase64": "I2Nsb3VkLWNvbmZpZw=="}}
    ]


def test_an_ssh_key_through_the_guest_agent_turns_ga_manage_ssh_on() -> None:
    code, vm, _ = create("--access-cred", "type:ssh,src:keys,user:cloud")
    assert code == 0
    assert vm is not None
    assert vm["spec"]["template"]["spec"]["accessCredentials"] == [
        {
            "sshPublicKey": {
                "propagationMethod": {"qemuGuestAgent": {"users": ["cloud"]}},
                "source": {"secret": {"secretName": "keys"}},
            }
        }
    ]
    user_data = volumes(vm)[0]["cloudInitNoCloud"]["userData"]
    assert user_data == "#cloud-config\nruncmd:\n  - [ setsebool, -P, 'virt_qemu_ga_manage_ssh', 'on' ]"


def test_an_ssh_key_through_nocloud_needs_no_user_and_only_the_header() -> None:
    code, vm, _ = create("--access-cred", "type:ssh,src:keys,method:nocloud")
    assert code == 0
    assert vm is not None
    credential = vm["spec"]["template"]["spec"]["accessCredentials"][0]
    assert credential["sshPublicKey"]["propagationMethod"] == {"noCloud": {}}
    # The access credential picked the source, so the disk is there even with only the header.
    assert volumes(vm) == [{"name": "cloudinitdisk", "cloudInitNoCloud": {"userData": "#cloud-config"}}]


def test_a_password_credential() -> None:
    code, vm, _ = create("--access-cred", "type:password,src:pw")
    assert code == 0
    assert vm is not None
    assert vm["spec"]["template"]["spec"]["accessCredentials"] == [
        {
            "userPassword": {
                "propagationMethod": {"qemuGuestAgent": {}},
                "source": {"secret": {"secretName": "pw"}},
            }
        }
    ]
    assert volumes(vm) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--access-cred", "type:ssh,src:keys"),
            'user must be specified with access credential ssh method ga ("--user" flag or param "user")',
        ),
        (
            ("--access-cred", "type:ssh,src:ns/keys,user:u"),
            'not allowed to specify namespace of secret "keys"',
        ),
        (
            ("--access-cred", "type:x,src:k"),
            'invalid access credential type "x", supported values are: ssh, password',
        ),
        (
            ("--access-cred", "type:password,src:k,user:u"),
            "user cannot be specified with selected access credential type and method",
        ),
        (
            ("--cloud-init", "configdrive", "--access-cred", "type:ssh,src:k,method:nocloud"),
            "method param and value passed to --cloud-init have to match: nocloud vs configdrive",
        ),
        (
            ("--cloud-init", "floppy", "--user", "u"),
            'invalid cloud-init data source type "floppy", supported values are: nocloud, configdrive, none',
        ),
    ],
)
def test_refusals(args: tuple[str, ...], message: str) -> None:
    code, _, err = create(*args)
    assert code == 1
    assert message in err


def test_none_writes_no_disk_but_warns() -> None:
    code, vm, err = create("--cloud-init", "none", "--ssh-key", "k")
    assert code == 0
    assert volumes(vm) == []
    assert (
        err == "WARNING: --cloud-init: was set to none, "
        "not creating a data source although other cloud-init options were set"
    )
