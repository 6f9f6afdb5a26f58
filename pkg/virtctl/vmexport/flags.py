"""The flags of ``virtctl vmexport FUNCTION NAME``: which fit which function, and what they ask for.

As KubeVirt's virtctl, every flag is accepted on the command line and then checked against the function,
so that a misplaced one is named (``the '--output' flag is incompatible with 'create'``); the checks run
in KubeVirt's order, so the same mistake gets the same message.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubevirt.service.durations import SECOND, parse_go_duration

CREATE, DELETE, DOWNLOAD = "create", "delete", "download"
GZIP_FORMAT, RAW_FORMAT = "gzip", "raw"
OUTPUT_FORMAT_JSON, OUTPUT_FORMAT_YAML = "json", "yaml"

OUTPUT_FLAG = "--output"
VOLUME_FLAG = "--volume"
VM_FLAG = "--vm"
SNAPSHOT_FLAG = "--snapshot"
INSECURE_FLAG = "--insecure"
KEEP_FLAG = "--keep-vme"
DELETE_FLAG = "--delete-vme"
FORMAT_FLAG = "--format"
PVC_FLAG = "--pvc"
MANIFEST_FLAG = "--manifest"
OUTPUT_FORMAT_FLAG = "--manifest-output-format"
SERVICE_URL_FLAG = "--service-url"
PORT_FORWARD_FLAG = "--port-forward"
LOCAL_PORT_FLAG = "--local-port"
RETRY_FLAG = "--retry"
LABELS_FLAG = "--labels"
ANNOTATIONS_FLAG = "--annotations"
READINESS_TIMEOUT_FLAG = "--readiness-timeout"

ERR_REQUIRED_EXPORT_TYPE = (
    "need to specify export kind when attempting to create a VirtualMachineExport [--pvc|--vm|--snapshot]"
)
ERR_INCOMPATIBLE_EXPORT_TYPE = "should not specify export kind"
BINARY_OUTPUT_WARNING = (
    f"warning: Binary output can mess up your terminal. Use '{OUTPUT_FLAG} -' to output into stdout anyway "
    f"or consider '{OUTPUT_FLAG} <FILE>' to save to a file"
)
# cobra's flag groups, in the order it checks them (sorted by their joined names).
EXCLUSIVE_GROUPS = (("keep-vme", "delete-vme"), ("vm", "snapshot", "pvc"))
DEFAULT_READINESS_TIMEOUT = 120.0
DEFAULT_LOCAL_PORT = "0"
STDOUT = "-"

KUBEVIRT_GROUP = "kubevirt.io"
SNAPSHOT_GROUP = "snapshot.kubevirt.io"


class VMExportError(Exception):
    """What virtctl prints on stderr before exiting 1."""


def incompatible(flag: str, with_: str) -> VMExportError:
    return VMExportError(f"the '{flag}' flag is incompatible with '{with_}'")


def invalid_value(flag: str, acceptable: str) -> VMExportError:
    return VMExportError(f"{flag} is not a valid value, acceptable values are {acceptable}")


@dataclass(frozen=True)
class Flags:
    """The command line as given; ``given`` names the flags that appeared on it (cobra's "changed")."""

    vm: str = ""
    snapshot: str = ""
    pvc: str = ""
    output: str = ""
    volume: str = ""
    format: str = ""
    insecure: bool = False
    keep_vme: bool = False
    delete_vme: bool = False
    ttl: str = ""
    manifest_output_format: str = ""
    service_url: str = ""
    port_forward: bool = False
    local_port: str = DEFAULT_LOCAL_PORT
    retry: int = 0
    include_secret: bool = False
    manifest: bool = False
    labels: tuple[str, ...] = ()
    annotations: tuple[str, ...] = ()
    readiness_timeout: str = ""
    given: frozenset[str] = frozenset()

    @property
    def has_source(self) -> bool:
        return bool(self.vm or self.snapshot or self.pvc)


@dataclass
class VMExportInfo:
    """What one run works with; the download updates some of it as KubeVirt's does (``keep_vme`` when the
    export already existed, ``decompress`` when the link is raw already, ``service_url`` once a random
    local port is known)."""

    function: str
    name: str
    namespace: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    should_create: bool = False
    insecure: bool = False
    keep_vme: bool = False
    delete_vme: bool = False
    include_secret: bool = False
    export_manifest: bool = False
    decompress: bool = False
    port_forward: bool = False
    local_port: str = DEFAULT_LOCAL_PORT
    output_file: str = ""  # "" writes to stdout
    volume_name: str = ""
    output_format: str = ""
    service_url: str = ""
    ttl_nanoseconds: int = 0
    retries: int = 0
    readiness_timeout: float = DEFAULT_READINESS_TIMEOUT
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


def parse_retry(text: str) -> int:
    """``--retry`` as pflag parses an int flag."""
    try:
        return int(text, 10)
    except ValueError:
        raise VMExportError(
            f'invalid argument "{text}" for "{RETRY_FLAG}" flag: strconv.ParseInt: parsing "{text}": '
            "invalid syntax"
        ) from None


def check_arguments(arguments: tuple[str, ...], flags: Flags) -> tuple[str, str]:
    """The function and export name, once the arguments and flags fit together."""
    if len(arguments) != 2:
        raise VMExportError(f"accepts 2 arg(s), received {len(arguments)}")
    _check_exclusive_groups(flags.given)
    function = arguments[0].lower()
    checks = {CREATE: _check_create, DELETE: _check_delete, DOWNLOAD: _check_download}
    check = checks.get(function)
    if check is None:
        raise VMExportError(f"invalid function '{function}'")
    check(flags)
    return function, arguments[1]


def _check_exclusive_groups(given: frozenset[str]) -> None:
    for group in EXCLUSIVE_GROUPS:
        present = sorted(name for name in group if name in given)
        if len(present) > 1:
            raise VMExportError(
                f"if any flags in the group [{' '.join(group)}] are set none of the others can be; "
                f"[{' '.join(present)}] were all set"
            )


def _download_only(flags: Flags) -> list[tuple[bool, str]]:
    """The flags only a download takes, each with whether it was used."""
    return [
        (bool(flags.output), OUTPUT_FLAG),
        (bool(flags.volume), VOLUME_FLAG),
        (flags.insecure, INSECURE_FLAG),
        (flags.keep_vme, KEEP_FLAG),
        (flags.delete_vme, DELETE_FLAG),
        (flags.port_forward, PORT_FORWARD_FLAG),
        (flags.local_port != DEFAULT_LOCAL_PORT, LOCAL_PORT_FLAG),
        (bool(flags.format), FORMAT_FLAG),
        (bool(flags.service_url), SERVICE_URL_FLAG),
        (flags.retry != 0, RETRY_FLAG),
    ]


def _refuse_used(used: Iterable[tuple[bool, str]], function: str) -> None:
    for is_used, flag in used:
        if is_used:
            raise incompatible(flag, function)


def _check_create(flags: Flags) -> None:
    if not flags.has_source:
        raise VMExportError(ERR_REQUIRED_EXPORT_TYPE)
    _refuse_used(_download_only(flags), CREATE)


def _check_delete(flags: Flags) -> None:
    if flags.has_source:
        raise VMExportError(ERR_INCOMPATIBLE_EXPORT_TYPE)
    creation_only = [
        (bool(flags.readiness_timeout), READINESS_TIMEOUT_FLAG),
        (bool(flags.labels), LABELS_FLAG),
        (bool(flags.annotations), ANNOTATIONS_FLAG),
    ]
    _refuse_used([*_download_only(flags), *creation_only], DELETE)


def _check_download(flags: Flags) -> None:
    if flags.port_forward and not _is_port(flags.local_port):
        raise invalid_value(LOCAL_PORT_FLAG, "valid port numbers")
    if flags.format not in ("", GZIP_FORMAT, RAW_FORMAT):
        raise invalid_value(FORMAT_FLAG, "gzip/raw")
    if flags.retry < 0:
        raise invalid_value(RETRY_FLAG, "positive integers")
    if flags.manifest:
        if flags.volume:
            raise incompatible(VOLUME_FLAG, MANIFEST_FLAG)
        if flags.manifest_output_format.lower() not in ("", OUTPUT_FORMAT_JSON, OUTPUT_FORMAT_YAML):
            raise invalid_value(OUTPUT_FORMAT_FLAG, "json/yaml")
        if flags.pvc:
            raise incompatible(PVC_FLAG, MANIFEST_FLAG)
    if not flags.manifest and not flags.output:
        raise VMExportError(BINARY_OUTPUT_WARNING)


def _is_port(text: str) -> bool:
    # strconv.Atoi: an optional sign, then decimal digits.
    digits = text[1:] if text[:1] in ("+", "-") else text
    return digits.isdigit() and digits.isascii() and 0 <= int(text) <= 65535


def export_source(flags: Flags) -> dict[str, Any]:
    """The export's ``spec.source``; with several given (not possible past the flag checks) the last of
    vm, snapshot, pvc wins, as in KubeVirt."""
    source: dict[str, Any] = {}
    if flags.vm:
        source = {"apiGroup": KUBEVIRT_GROUP, "kind": "VirtualMachine", "name": flags.vm}
    if flags.snapshot:
        source = {"apiGroup": SNAPSHOT_GROUP, "kind": "VirtualMachineSnapshot", "name": flags.snapshot}
    if flags.pvc:
        source = {"apiGroup": "", "kind": "PersistentVolumeClaim", "name": flags.pvc}
    return source


def key_values(values: Iterable[str]) -> dict[str, str]:
    """``--labels``/``--annotations``: each flag is a comma-separated (CSV) list of ``key=value``; items
    without ``=`` are dropped."""
    result: dict[str, str] = {}
    for value in values:
        for item in next(csv.reader([value]), []):
            key, sep, item_value = item.partition("=")
            if sep:
                result[key] = item_value
    return result


def build_info(function: str, name: str, flags: Flags) -> VMExportInfo:
    """What the run works with, once the flags passed :func:`check_arguments`."""
    info = VMExportInfo(
        function=function,
        name=name,
        source=export_source(flags),
        should_create=function == DOWNLOAD and flags.has_source,
        insecure=flags.insecure,
        keep_vme=flags.keep_vme,
        delete_vme=flags.delete_vme,
        include_secret=flags.include_secret,
        export_manifest=flags.manifest,
        decompress=flags.format == RAW_FORMAT,
        output_file=flags.output if flags.output != STDOUT else "",
        volume_name=flags.volume,
        output_format=flags.manifest_output_format,
        service_url=flags.service_url,
        retries=flags.retry,
        labels=key_values(flags.labels),
        annotations=key_values(flags.annotations),
    )
    if flags.port_forward:
        # The exporter's certificate names the service, not 127.0.0.1: KubeVirt skips verification here.
        info.port_forward, info.insecure, info.local_port = True, True, flags.local_port
        info.service_url = info.service_url or f"127.0.0.1:{flags.local_port}"
    try:
        if flags.ttl:
            info.ttl_nanoseconds = parse_go_duration(flags.ttl)
        if flags.readiness_timeout:
            info.readiness_timeout = parse_go_duration(flags.readiness_timeout) / SECOND
    except ValueError as err:  # worded as Go's time package words it
        raise VMExportError(str(err)) from None
    return info
