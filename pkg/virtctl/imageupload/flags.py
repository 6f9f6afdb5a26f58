"""``virtctl image-upload``'s flags and arguments, checked in the order KubeVirt's virtctl checks them.

Two ways to name the target: ``dv NAME`` / ``pvc NAME`` (the current form), or the deprecated
``--pvc-name NAME``, which always means a PVC and skips the checks of the volume mode and the paths
(as KubeVirt's does). Every failure is an :class:`UploadError` carrying KubeVirt's one-line message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The deprecated flags and what pflag prints (on stdout, through cobra) when one is used.
DEPRECATED = {
    "pvc-name": "specify the name as the second argument instead.",
    "pvc-size": "use --size instead.",
    "block-volume": "specify volume mode (filesystem/block) with --volume-mode instead.",
}
VOLUME_MODE_BLOCK = "block"
VOLUME_MODE_FILESYSTEM = "filesystem"
DEFAULT_WAIT_SECS = "300"
DEFAULT_RETRIES = "5"
_UINT64_MAX = 2**64 - 1
# strconv.ParseUint with base 0: an optional 0x/0o/0b prefix (underscores only after one), or a leading 0
# for octal.
_PREFIXED = re.compile(r"0([xX][0-9a-fA-F_]+|[oO][0-7_]+|[bB][01_]+)\Z")
_OCTAL = re.compile(r"0[0-7_]+\Z")
_DECIMAL = re.compile(r"[0-9]+\Z")


class UploadError(Exception):
    """What the command prints on stderr before exiting 1."""


@dataclass
class UploadInfo:
    """Every flag (unset strings read ``""``, as in Go) and what the arguments decide."""

    name: str = ""
    namespace: str = ""
    insecure: bool = False
    upload_proxy_url: str = ""
    size: str = ""
    pvc_size: str = ""
    storage_class: str = ""
    access_mode: str = ""
    block_volume: bool = False
    volume_mode: str = ""
    image_path: str = ""
    archive_path: str = ""
    no_create: bool = False
    wait_secs: int = 300
    retries: int = 5
    force_bind: bool = False
    datasource: bool = False
    default_instancetype: str = ""
    default_instancetype_kind: str = ""
    default_preference: str = ""
    default_preference_kind: str = ""
    # Decided by the arguments.
    create_pvc: bool = False
    archive_upload: bool = False


def parse_uint(text: str, flag: str) -> int:
    """A ``uint`` flag as pflag reads it (``strconv.ParseUint(text, 0, 64)``), with pflag's error."""
    value: int | None = None
    try:
        if _PREFIXED.match(text):
            value = int(text, 0)  # refuses misplaced underscores, as Go does
        elif _OCTAL.match(text):
            value = int(text.replace("_", ""), 8) if _underscores_ok(text[1:]) else None
        elif _DECIMAL.match(text):
            value = int(text, 10)
    except ValueError:
        value = None
    if value is None:
        raise UploadError(_uint_error(text, flag, "invalid syntax"))
    if value > _UINT64_MAX:
        raise UploadError(_uint_error(text, flag, "value out of range"))
    return value


def _underscores_ok(digits: str) -> bool:
    """Go's rule after the prefix ``0``: an underscore only between digits (or right after the prefix)."""
    return not digits.endswith("_") and "__" not in digits


def _uint_error(text: str, flag: str, why: str) -> str:
    return f'invalid argument "{text}" for "--{flag}" flag: strconv.ParseUint: parsing "{text}": {why}'


def check_arity(arguments: tuple[str, ...]) -> None:
    """cobra's ``MaximumNArgs(2)``."""
    if len(arguments) > 2:
        raise UploadError(f"accepts at most 2 arg(s), received {len(arguments)}")


def parse_args(info: UploadInfo, arguments: tuple[str, ...]) -> None:
    """Settles the target's kind and name, the size and the volume mode; KubeVirt's order of checks."""
    if info.size and info.pvc_size and info.size != info.pvc_size:
        raise UploadError("--pvc-size and --size can not be specified at the same time")
    if info.pvc_size:
        info.size = info.pvc_size
    if info.name:
        # The deprecated form: a PVC, and nothing else is checked.
        if arguments:
            raise UploadError("cannot use --pvc-name and args")
        info.create_pvc = True
        return
    _settle_volume_mode(info)
    _settle_paths(info)
    if len(arguments) != 2:
        raise UploadError("expecting two args")
    kind = arguments[0].lower()
    if kind not in ("dv", "pvc"):
        raise UploadError(f"invalid resource type {arguments[0]}")
    info.create_pvc = kind == "pvc"
    info.name = arguments[1]


def _settle_volume_mode(info: UploadInfo) -> None:
    if info.block_volume:
        if not info.volume_mode:
            info.volume_mode = VOLUME_MODE_BLOCK
        elif info.volume_mode != VOLUME_MODE_BLOCK:
            raise UploadError(f"incompatible --volume-mode '{info.volume_mode}' and --block-volume")
    if info.volume_mode not in (VOLUME_MODE_BLOCK, VOLUME_MODE_FILESYSTEM, ""):
        raise UploadError(
            f"Invalid volume mode '{info.volume_mode}'. Valid values are 'block' and 'filesystem'."
        )


def _settle_paths(info: UploadInfo) -> None:
    info.archive_upload = False
    if not info.image_path and not info.archive_path:
        raise UploadError("either image-path or archive-path must be provided")
    if info.image_path and info.archive_path:
        raise UploadError("cannot handle both image-path and archive-path, provide only one")
    if info.archive_path:
        info.archive_upload = True
        info.image_path = info.archive_path  # the archive is what gets read and sent
        if info.volume_mode == VOLUME_MODE_BLOCK:
            raise UploadError("In archive upload the volume mode should always be filesystem")


def check_default_instancetype(info: UploadInfo) -> None:
    if not info.default_instancetype and info.default_instancetype_kind:
        raise UploadError("--default-instancetype must be provided with --default-instancetype-kind")
    if not info.default_preference and info.default_preference_kind:
        raise UploadError("--default-preference must be provided with --default-preference-kind")
    if (info.default_instancetype or info.default_preference) and info.no_create:
        raise UploadError("--default-instancetype and --default-preference cannot be used with --no-create")
