"""``virtctl vmexport create|delete|download NAME``: the command line, as KubeVirt's virtctl takes it.

One command with two arguments (the function, in any case, and the export's name) and every flag, so that
a flag given to the wrong function is refused by name. Failures print on stderr and exit 1.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

import click

from kubevirt.client import ApiError, KubeApi
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.vmexport.download import Downloader
from kubevirt.virtctl.vmexport.exports import create_export, delete_export
from kubevirt.virtctl.vmexport.flags import (
    CREATE,
    DEFAULT_LOCAL_PORT,
    DELETE,
    Flags,
    VMExportError,
    VMExportInfo,
    build_info,
    check_arguments,
    parse_retry,
)
from kubevirt.virtctl.vmexport.portforward import Dialer, pod_dialer
from kubevirt.virtctl.vmexport.printer import Printer

EXIT_FAILED = 1
EXAMPLES = """\b
Examples:
  # Create a VirtualMachineExport to export a volume from a virtual machine:
  virtctl vmexport create vm1-export --vm=vm1

\b
  # Create a VirtualMachineExport to export a volume from a virtual machine snapshot
  virtctl vmexport create snap1-export --snapshot=snap1

\b
  # Create a VirtualMachineExport to export a volume from a PVC
  virtctl vmexport create pvc1-export --pvc=pvc1

\b
  # Delete a VirtualMachineExport resource
  virtctl vmexport delete snap1-export

\b
  # Download a volume from an already existing VirtualMachineExport (--volume is optional when only one
  # volume is available)
  virtctl vmexport download vm1-export --volume=volume1 --output=disk.img.gz

\b
  # Download a volume as before but through local port 5410
  virtctl vmexport download vm1-export --volume=volume1 --output=disk.img.gz --port-forward --local-port=5410

\b
  # Create a VirtualMachineExport and download the requested volume from it
  virtctl vmexport download vm1-export --vm=vm1 --volume=volume1 --output=disk.img.gz

\b
  # Create a VirtualMachineExport and get the VirtualMachine manifest in Yaml format
  virtctl vmexport download vm1-export --vm=vm1 --manifest

\b
  # Get the VirtualMachine manifest in Yaml format from an existing VirtualMachineExport including CDI
  # header secret
  virtctl vmexport download existing-export --include-secret --manifest
"""
# The names on the command line of the flags in cobra's exclusive groups.
_GROUPED = {
    "vm": "vm",
    "snapshot": "snapshot",
    "pvc": "pvc",
    "keep_vme": "keep-vme",
    "delete_vme": "delete-vme",
}
_CLIENT_OPTIONS = ("kubeconfig", "kube_context", "namespace")


def _string(name: str, help_text: str, default: str | None = None) -> Any:
    return click.option(name, default=default, help=help_text)


def _flag(name: str, help_text: str) -> Any:
    return click.option(name, is_flag=True, default=False, help=help_text)


OPTIONS = (
    _string("--vm", "Sets VirtualMachine as vmexport kind and specifies the vm name."),
    _string("--snapshot", "Sets VirtualMachineSnapshot as vmexport kind and specifies the snapshot name."),
    _string("--pvc", "Sets PersistentVolumeClaim as vmexport kind and specifies the PVC name."),
    _string("--output", "Specifies the output path of the volume to be downloaded."),
    _string("--volume", "Specifies the volume to be downloaded."),
    click.option(
        "--format",
        "format_",
        default=None,
        help="Used to specify the format of the downloaded image. "
        "There's two options: gzip (default) and raw.",
    ),
    _flag(
        "--insecure",
        "When used with the 'download' option, specifies that the http request should be insecure.",
    ),
    _flag(
        "--keep-vme",
        "When used with the 'download' option, specifies that the vmexport object should always be retained "
        "after the download finishes.",
    ),
    _flag(
        "--delete-vme",
        "When used with the 'download' option, specifies that the vmexport object should always be deleted "
        "after the download finishes.",
    ),
    _string(
        "--ttl",
        "The time after the export was created that it is eligible to be automatically deleted, defaults to "
        "2 hours by the server side if not specified",
    ),
    _string(
        "--manifest-output-format", "Manifest output format, defaults to Yaml. Valid options are yaml or json"
    ),
    _string(
        "--service-url",
        "Specify service url to use in the returned manifest, instead of the external URL in the Virtual "
        "Machine export status. This is useful for NodePorts or if you don't have an external URL configured",
    ),
    _flag(
        "--port-forward",
        "Configures port-forwarding on a random port. Useful to download without proper ingress/route "
        "configuration",
    ),
    _string("--local-port", "Defines the specific port to be used in port-forward.", DEFAULT_LOCAL_PORT),
    _string(
        "--retry",
        "When export server returns a transient error, we retry this number of times before giving up",
    ),
    _flag(
        "--include-secret",
        "When used with manifest and set to true include a secret that contains proper headers for CDI to "
        "import using the manifest",
    ),
    _flag("--manifest", "Instead of downloading a volume, retrieve the VM manifest"),
    click.option(
        "--labels",
        multiple=True,
        help="Specify custom labels to VM export object and its associated pod",
    ),
    click.option(
        "--annotations",
        multiple=True,
        help="Specify custom annotations to VM export object and its associated pod",
    ),
    _string("--readiness-timeout", "Specify maximum wait for VM export object to be ready"),
)


def flags_of(options: dict[str, Any]) -> Flags:
    """The command line's flags; an unset string flag reads as ``""``, as in Go."""
    given = frozenset(flag for key, flag in _GROUPED.items() if options[key] not in (None, False))
    retry = parse_retry(options["retry"]) if options["retry"] is not None else 0
    strings = {
        key: options[key] or ""
        for key in (
            "vm",
            "snapshot",
            "pvc",
            "output",
            "volume",
            "ttl",
            "manifest_output_format",
            "service_url",
            "readiness_timeout",
        )
    }
    return Flags(
        **strings,
        format=options["format_"] or "",
        insecure=options["insecure"],
        keep_vme=options["keep_vme"],
        delete_vme=options["delete_vme"],
        port_forward=options["port_forward"],
        local_port=options["local_port"],
        retry=retry,
        include_secret=options["include_secret"],
        manifest=options["manifest"],
        labels=tuple(options["labels"]),
        annotations=tuple(options["annotations"]),
        given=given,
    )


@contextlib.contextmanager
def output_stream(path: str) -> Iterator[BinaryIO]:
    """The file the volume or manifests go to (created now, as KubeVirt creates it), else stdout."""
    if not path:
        yield sys.stdout.buffer
        return
    try:
        handle = open(path, "wb")  # noqa: SIM115 - closed below, after the whole run
    except OSError as err:
        reason = (err.strerror or str(err)).lower()
        raise VMExportError(f"open {path}: {reason}") from None
    with handle:
        yield handle


def execute(api: KubeApi, info: VMExportInfo, printer: Printer, out: BinaryIO, dialer: Dialer) -> None:
    if info.function == CREATE:
        create_export(api, info, printer)
    elif info.function == DELETE:
        delete_export(api, info, printer)
    else:
        Downloader(api, info, printer, out, dialer).run()


def _fail(message: str) -> None:
    click.echo(message, err=True)
    sys.exit(EXIT_FAILED)


def _decorate(function: Any) -> Any:
    for option in reversed(OPTIONS):
        function = option(function)
    return function


@click.command(name="vmexport", help="Export a VM volume.", epilog=EXAMPLES)
@click.argument("arguments", nargs=-1, metavar="create|delete|download NAME")
@_decorate
@client_flags
@click.pass_context
def vmexport(ctx: click.Context, /, arguments: tuple[str, ...], **options: Any) -> None:
    client_options = {key: options.pop(key) for key in _CLIENT_OPTIONS}
    try:
        flags = flags_of(options)
        function, name = check_arguments(arguments, flags)
        info = build_info(function, name, flags)
        printer = Printer(to_stderr=not info.output_file)
        with output_stream(info.output_file) as out:
            client, namespace = connect(flags_from(ctx, **client_options))
            info.namespace = namespace
            execute(
                client,
                info,
                printer,
                out,
                lambda pod, port: pod_dialer(client.connection, namespace)(pod, port),
            )
    except VMExportError as err:
        _fail(str(err))
    except ApiError as err:
        _fail(err.message or str(err))
    except OSError as err:
        _fail(str(err))
