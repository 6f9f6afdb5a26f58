"""``virtctl image-upload dv|pvc NAME``: upload a local disk image (or archive) to a DataVolume or PVC
through CDI's upload proxy, as KubeVirt's virtctl does.

Steps: the flags, the target (created or checked), the wait for the upload server, the proxy's URL
(``--uploadproxy-url`` or the CDIConfig's), an upload token, the transfer, ``--datasource``, then the
wait for CDI to finish processing. Messages go to stdout, failures to stderr with exit code 1.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import click

from kubevirt.client import ApiError, KubeApi
from kubevirt.client.resources import CDI_CONFIGS
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.imageupload.datasource import point_data_source
from kubevirt.virtctl.imageupload.flags import (
    DEFAULT_RETRIES,
    DEFAULT_WAIT_SECS,
    DEPRECATED,
    UploadError,
    UploadInfo,
    check_arity,
    check_default_instancetype,
    parse_args,
    parse_uint,
)
from kubevirt.virtctl.imageupload.objects import UPLOAD_TOKEN_REQUESTS, token_request_body
from kubevirt.virtctl.imageupload.progress import UploadBar, terminal_width
from kubevirt.virtctl.imageupload.target import prepare_target
from kubevirt.virtctl.imageupload.transfer import BarFactory, Sleep, upload_file
from kubevirt.virtctl.imageupload.urls import with_scheme
from kubevirt.virtctl.imageupload.waits import (
    wait_data_volume_ready,
    wait_processing_complete,
    wait_upload_server_ready,
)
from kubevirt.virtctl.vmexport.flags import VMExportError
from kubevirt.virtctl.vmexport.printer import Printer
from kubevirt_api.cdi.constants import CDI_CONFIG_NAME

EXIT_FAILED = 1
PROCESSING_STARTED = (
    "Uploading data completed successfully, waiting for processing to complete, "
    "you can hit ctrl-c without interrupting the progress\n"
)
PROCESSING_TIMED_OUT = (
    "Timed out waiting for post upload processing to complete, please check upload pod status for progress\n"
)
EXAMPLES = """\b
Examples:
  # Upload a local disk image to a newly created DataVolume:
  virtctl image-upload dv fedora-dv --size=10Gi --image-path=/images/fedora30.qcow2

\b
  # Upload a local disk image to an existing DataVolume
  virtctl image-upload dv fedora-dv --no-create --image-path=/images/fedora30.qcow2

\b
  # Upload a local disk image to a newly created PersistentVolumeClaim
  virtctl image-upload pvc fedora-pvc --size=10Gi --image-path=/images/fedora30.qcow2

\b
  # Upload a local disk image to a newly created PersistentVolumeClaim and label it with a default
  # instance type and preference
  virtctl image-upload pvc fedora-pvc --size=10Gi --image-path=/images/fedora30.qcow2 \\
    --default-instancetype=n1.medium --default-preference=fedora

\b
  # Upload a local disk image to an existing PersistentVolumeClaim
  virtctl image-upload pvc fedora-pvc --no-create --image-path=/images/fedora30.qcow2

\b
  # Upload to a DataVolume with explicit URL to CDI Upload Proxy
  virtctl image-upload dv fedora-dv --uploadproxy-url=https://cdi-uploadproxy.mycluster.com \\
    --image-path=/images/fedora30.qcow2

\b
  # Upload a local disk archive to a newly created DataVolume:
  virtctl image-upload dv fedora-dv --size=10Gi --archive-path=/images/fedora30.tar
"""
_CLIENT_OPTIONS = ("kubeconfig", "kube_context", "namespace")
_STRINGS = (
    "upload_proxy_url",
    "name",
    "pvc_size",
    "size",
    "storage_class",
    "access_mode",
    "volume_mode",
    "image_path",
    "archive_path",
    "default_instancetype",
    "default_instancetype_kind",
    "default_preference",
    "default_preference_kind",
)
_BOOLS = ("insecure", "block_volume", "no_create", "force_bind", "datasource")


def pause(seconds: float) -> None:
    time.sleep(seconds)


def stdout_bar(total: int) -> UploadBar:
    return UploadBar(
        lambda text: click.echo(text, nl=False), total, terminal=sys.stdout.isatty(), width=terminal_width()
    )


def open_image(path: str) -> BinaryIO:
    try:
        return open(path, "rb")  # closed by the caller after the upload
    except OSError as err:
        raise UploadError(f"open {path}: {(err.strerror or str(err)).lower()}") from None


def config_proxy_url(api: KubeApi) -> str:
    """The CDIConfig's URL: the override when set (even to nothing), else the one CDI found."""
    config = api.get(CDI_CONFIGS, None, CDI_CONFIG_NAME)
    override = (config.get("spec") or {}).get("uploadProxyURLOverride")
    if override is not None:
        return str(override)
    return str((config.get("status") or {}).get("uploadProxyURL") or "")


def upload_token(api: KubeApi, info: UploadInfo) -> str:
    response = api.create(UPLOAD_TOKEN_REQUESTS, info.namespace, token_request_body(info))
    return str((response.get("status") or {}).get("token") or "")


@dataclass
class Uploader:
    api: KubeApi
    info: UploadInfo
    printer: Printer
    new_bar: BarFactory = stdout_bar
    sleep: Sleep = field(default=lambda seconds: pause(seconds))

    def run(self, arguments: tuple[str, ...]) -> None:
        info, printer = self.info, self.printer
        parse_args(info, arguments)
        check_default_instancetype(info)
        with open_image(info.image_path) as image:
            prepare_target(self.api, info, printer)
            if info.create_pvc:
                wait_upload_server_ready(self.api, info, printer, self.sleep)
            else:
                wait_data_volume_ready(self.api, info, printer, self.sleep)
            proxy_url = info.upload_proxy_url or config_proxy_url(self.api)
            if not proxy_url:
                raise UploadError("uploadproxy URL not found")
            proxy_url = with_scheme(proxy_url)
            printer.say(f"Uploading data to {proxy_url}\n")
            token = upload_token(self.api, info)
            upload_file(
                proxy_url,
                token,
                image,
                insecure=info.insecure,
                retries=info.retries,
                printer=printer,
                new_bar=self.new_bar,
                sleep=self.sleep,
            )
        if info.datasource:
            point_data_source(self.api, info, printer)
        printer.say(PROCESSING_STARTED)
        try:
            wait_processing_complete(self.api, info, printer, self.sleep)
        except (ApiError, VMExportError):
            printer.say(PROCESSING_TIMED_OUT)
            raise
        printer.say(f"Uploading {info.image_path} completed successfully\n")


def info_from(options: dict[str, Any]) -> UploadInfo:
    """The flags; the ``uint`` ones are read as pflag reads them."""
    wait_secs = parse_uint(options["wait_secs"], "wait-secs")
    retries = parse_uint(options["retry"], "retry")
    info = UploadInfo(wait_secs=wait_secs, retries=retries)
    for key in _STRINGS:
        setattr(info, key, options[key] or "")
    for key in _BOOLS:
        setattr(info, key, bool(options[key]))
    return info


def _say_deprecations(options: dict[str, Any], printer: Printer) -> None:
    given = {
        "pvc-name": options["name"],
        "pvc-size": options["pvc_size"],
        "block-volume": options["block_volume"],
    }
    for flag, why in DEPRECATED.items():
        if given[flag] not in (None, False):
            printer.say(f"Flag --{flag} has been deprecated, {why}\n")


def _fail(message: str) -> None:
    click.echo(message, err=True)
    sys.exit(EXIT_FAILED)


def _string(name: str, help_text: str, *, dest: str | None = None, hidden: bool = False) -> Any:
    declarations = [name, dest] if dest else [name]
    return click.option(*declarations, default=None, help=help_text, hidden=hidden)


def _flag(name: str, help_text: str, *, hidden: bool = False) -> Any:
    return click.option(name, is_flag=True, default=False, help=help_text, hidden=hidden)


OPTIONS = (
    _flag("--insecure", "Allow insecure server connections when using HTTPS."),
    _string("--uploadproxy-url", "The URL of the cdi-upload proxy service.", dest="upload_proxy_url"),
    _string("--pvc-name", "The destination DataVolume/PVC name.", dest="name", hidden=True),
    _string("--pvc-size", "The size of the PVC to create (ex. 10Gi, 500Mi).", hidden=True),
    _string("--size", "The size of the DataVolume to create (ex. 10Gi, 500Mi)."),
    _string("--storage-class", "The storage class for the PVC."),
    _string("--access-mode", "The access mode for the PVC."),
    _flag(
        "--block-volume",
        "Create a PVC with VolumeMode=Block (default is the storageProfile default. "
        "for archive upload default is filesystem).",
        hidden=True,
    ),
    _string(
        "--volume-mode",
        "Specify the VolumeMode (block/filesystem) used to create the PVC. Default is the storageProfile "
        "default. For archive upload default is filesystem.",
    ),
    _string("--image-path", "Path to the local VM image."),
    _string("--archive-path", "Path to the local archive."),
    _flag("--no-create", "Don't attempt to create a new DataVolume/PVC."),
    click.option(
        "--wait-secs",
        default=DEFAULT_WAIT_SECS,
        metavar="UINT",
        show_default=True,
        help="Seconds to wait for upload pod to start.",
    ),
    click.option(
        "--retry",
        default=DEFAULT_RETRIES,
        metavar="UINT",
        show_default=True,
        help="When upload server returns a transient error, we retry this number of times before giving up",
    ),
    _flag("--force-bind", "Force bind the PVC, ignoring the WaitForFirstConsumer logic."),
    _flag("--datasource", "Create a DataSource pointing to the created DataVolume/PVC."),
    _string("--default-instancetype", "The default instance type to associate with the image."),
    _string("--default-instancetype-kind", "The default instance type kind to associate with the image."),
    _string("--default-preference", "The default preference to associate with the image."),
    _string("--default-preference-kind", "The default preference kind to associate with the image."),
)


def _decorate(function: Any) -> Any:
    for option in reversed(OPTIONS):
        function = option(function)
    return function


@click.command(
    name="image-upload", help="Upload a VM image to a DataVolume/PersistentVolumeClaim.", epilog=EXAMPLES
)
@click.argument("arguments", nargs=-1, metavar="[dv|pvc NAME]")
@_decorate
@client_flags
@click.pass_context
def image_upload(ctx: click.Context, /, arguments: tuple[str, ...], **options: Any) -> None:
    client_options = {key: options.pop(key) for key in _CLIENT_OPTIONS}
    printer = Printer(to_stderr=False)
    try:
        info = info_from(options)
        _say_deprecations(options, printer)
        check_arity(arguments)
        client, namespace = connect(flags_from(ctx, **client_options))
        info.namespace = namespace
        Uploader(client, info, printer).run(arguments)
    except (UploadError, VMExportError) as err:
        _fail(str(err))
    except ApiError as err:
        _fail(err.message or str(err))
    except OSError as err:
        _fail(str(err))
