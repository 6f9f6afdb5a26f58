"""``virtctl create vm``'s access credential and cloud-init flags, as KubeVirt's virtctl handles them.

``--access-cred`` adds SSH keys (propagated by the guest agent, NoCloud or ConfigDrive) or user
passwords (guest agent) from secrets; an SSH key via the guest agent turns ``--ga-manage-ssh`` on, one
via cloud-init picks the matching ``--cloud-init`` source. Any cloud-init flag (or such a change)
adds the ``cloudinitdisk`` volume, its user data built from ``--user``, ``--password-file``,
``--ssh-key`` and ``--ga-manage-ssh`` unless ``--cloud-init-user-data`` gives it whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import click

from kubevirt.virtctl.create.params import FlagError, flag_error, parse_params, split_prefixed_name
from kubevirt_api.view import JSON

__all__ = ["CloudInitFlags", "access_credentials", "cloud_init_volume"]


ACCESS_CRED: Final = "access-cred"
CLOUD_INIT: Final = "cloud-init"
HEADER: Final = "#cloud-config"
DISK: Final = "cloudinitdisk"
NOCLOUD, CONFIGDRIVE, NONE = "nocloud", "configdrive", "none"
_USER_INVALID: Final = "user cannot be specified with selected access credential type and method"
_CLOUD_INIT_FLAGS: Final = (
    "user",
    "password-file",
    "ssh-key",
    "ga-manage-ssh",
    "cloud-init",
    "cloud-init-user-data",
    "cloud-init-network-data",
)


@dataclass
class CloudInitFlags:
    """The flags' values, and which of them were given (or set by an access credential)."""

    user: str = ""
    password_file: str = ""
    ssh_keys: list[str] = field(default_factory=list)
    ga_manage_ssh: bool = False
    cloud_init: str = NOCLOUD
    user_data: str = ""
    network_data: str = ""
    changed: set[str] = field(default_factory=set)


def access_credentials(values: tuple[str, ...], flags: CloudInitFlags) -> list[JSON]:
    """One accessCredentials entry per ``--access-cred`` value (may change ``flags``)."""
    return [_access_credential(value, flags) for value in values]


def _access_credential(value: str, flags: CloudInitFlags) -> JSON:
    params = parse_params(ACCESS_CRED, value, ("type", "src", "method", "user"))
    source = params.get("src", "")
    if not source:
        raise flag_error(ACCESS_CRED, "src must be specified")
    try:
        namespace, name = split_prefixed_name(ACCESS_CRED, source)
    except FlagError as err:
        raise flag_error(ACCESS_CRED, f"src invalid: {err.message.split(': ', 1)[-1]}") from None
    if namespace:
        raise flag_error(ACCESS_CRED, f'not allowed to specify namespace of secret "{name}"')
    kind = params.get("type", "").lower()
    if kind in ("ssh", ""):
        return _ssh(params, flags)
    if kind == "password":
        return _password(params)
    raise flag_error(
        ACCESS_CRED,
        f'invalid access credential type "{params["type"]}", supported values are: ssh, password',
    )


def _ssh(params: dict[str, str], flags: CloudInitFlags) -> JSON:
    method = params.get("method", "").lower()
    if method in ("ga", ""):
        user = params.get("user") or flags.user
        if not user:
            raise flag_error(
                ACCESS_CRED,
                'user must be specified with access credential ssh method ga ("--user" flag or param "user")',
            )
        if "ga-manage-ssh" not in flags.changed:
            flags.ga_manage_ssh = True
            flags.changed.add("ga-manage-ssh")
        return _ssh_credential(params["src"], {"qemuGuestAgent": {"users": [user]}})
    if method in (NOCLOUD, CONFIGDRIVE):
        if params.get("user"):
            raise flag_error(ACCESS_CRED, _USER_INVALID)
        if CLOUD_INIT not in flags.changed:
            flags.cloud_init = method
            flags.changed.add(CLOUD_INIT)
        if flags.cloud_init.lower() != method:
            raise flag_error(
                ACCESS_CRED,
                f"method param and value passed to --{CLOUD_INIT} have to match: "
                f"{method} vs {flags.cloud_init}",
            )
        propagation = "noCloud" if method == NOCLOUD else "configDrive"
        return _ssh_credential(params["src"], {propagation: {}})
    raise flag_error(
        ACCESS_CRED,
        f'invalid access credentials ssh method "{params["method"]}", supported values are: '
        f"ga, {NOCLOUD}, {CONFIGDRIVE}",
    )


def _ssh_credential(secret: str, propagation: JSON) -> JSON:
    return {"sshPublicKey": {"source": {"secret": {"secretName": secret}}, "propagationMethod": propagation}}


def _password(params: dict[str, str]) -> JSON:
    method = params.get("method", "")
    if method and method.lower() != "ga":
        raise flag_error(
            ACCESS_CRED, f'invalid access credentials password method "{method}", supported values are: ga'
        )
    if params.get("user"):
        raise flag_error(ACCESS_CRED, _USER_INVALID)
    return {
        "userPassword": {
            "source": {"secret": {"secretName": params["src"]}},
            "propagationMethod": {"qemuGuestAgent": {}},
        }
    }


def cloud_init_volume(flags: CloudInitFlags, existing: list[str]) -> JSON | None:
    """The ``cloudinitdisk`` volume the flags ask for, or None; warnings go to stderr."""
    if not any(name in flags.changed for name in _CLOUD_INIT_FLAGS):
        return None
    if "password-file" in flags.changed:
        click.echo(
            "WARNING: --password-file: The password is stored in cleartext in the VM definition!", err=True
        )
    if DISK in existing:
        raise click.ClickException(f'there is already a volume with name "{DISK}"')
    kind = flags.cloud_init.lower()
    if kind == NONE:
        others = (
            "password-file",
            "ssh-key",
            "ga-manage-ssh",
            "cloud-init-user-data",
            "cloud-init-network-data",
        )
        if any(name in flags.changed for name in others):
            message = (
                "WARNING: --cloud-init: was set to none, "
                "not creating a data source although other cloud-init options were set"
            )
            click.echo(message, err=True, nl=False)
        return None
    if kind not in (NOCLOUD, CONFIGDRIVE):
        raise flag_error(
            CLOUD_INIT,
            f'invalid cloud-init data source type "{flags.cloud_init}", supported values are: '
            f"{NOCLOUD}, {CONFIGDRIVE}, {NONE}",
        )
    source: JSON = {}
    if flags.network_data:
        source["networkDataBase64"] = flags.network_data
    if flags.user_data:
        source["userDataBase64"] = flags.user_data
    else:
        source["userData"] = _user_data(flags)
    only_header = source.get("userData") == HEADER and not flags.network_data
    if CLOUD_INIT not in flags.changed and only_header:
        return None
    key = "cloudInitNoCloud" if kind == NOCLOUD else "cloudInitConfigDrive"
    return {"name": DISK, key: source}


def _user_data(flags: CloudInitFlags) -> str:
    config = HEADER
    if flags.user:
        config += f"\nuser: {flags.user}"
    if flags.password_file:
        try:
            with open(flags.password_file, encoding="utf-8") as handle:
                password = handle.read().strip()
        except FileNotFoundError:
            raise flag_error(
                "password-file", f"open {flags.password_file}: no such file or directory"
            ) from None
        except OSError as err:
            raise flag_error("password-file", f"open {flags.password_file}: {err.strerror or err}") from None
        if password:
            config += f"\npassword: {password}\nchpasswd: {{ expire: False }}"
    if flags.ssh_keys:
        config += "\nssh_authorized_keys:" + "".join(f"\n  - {key}" for key in flags.ssh_keys)
    if flags.ga_manage_ssh:
        config += "\nruncmd:\n  - [ setsebool, -P, 'virt_qemu_ga_manage_ssh', 'on' ]"
    return config
