"""The export server's TLS: the certificate parameters the KubeVirt CR asks for, the export CA virt-operator
mounts into virt-controller, and the per-pod Secret holding a server certificate it signs.

The parameters are stored on the exporter pod (``kubevirt.io/export.certParameters``) as KubeVirt's Go
encoding of its ``CertParams`` (durations in nanoseconds): a pod made under other parameters is replaced.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final, Protocol

from kubevirt.log import get_logger
from kubevirt.service.certs import (
    CERT_KEY,
    CLUSTER_DOMAIN,
    KEY_KEY,
    CertificateError,
    CertificateSpec,
    KeyPair,
    load_pair_files,
    new_certificate,
    rotation_policy,
)
from kubevirt.service.durations import MICROSECOND, SECOND
from kubevirt.service.reloading import Reloading, modification_times
from kubevirt.virt_controller.watch.snapshot.common import owner_ref
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1.kubevirt import KubeVirtSelfSignConfiguration
from kubevirt_api.view import JSON

from .names import ANN_CERT_PARAMS, export_service_name

CA_DIR: Final = Path("/etc/virt-controller/exportca")
# The pod's volume holding its certificate Secret (its name is read back from the pod).
CERTIFICATES_VOLUME: Final = "certificates"


class ExportCertificateError(Exception):
    """The certificate of an exporter pod cannot be made (no KubeVirt CR, no export CA, a bad pod)."""


@dataclass(frozen=True)
class CertParams:
    duration: timedelta
    renew_before: timedelta

    def serialize(self) -> str:
        """Go's ``json.Marshal`` of KubeVirt's ``CertParams``."""
        return json.dumps(
            {"Duration": _nanoseconds(self.duration), "RenewBefore": _nanoseconds(self.renew_before)},
            separators=(",", ":"),
        )

    @classmethod
    def deserialize(cls, text: str) -> CertParams:
        try:
            values = json.loads(text)
            return cls(
                duration=timedelta(microseconds=int(values["Duration"]) / MICROSECOND),
                renew_before=timedelta(microseconds=int(values["RenewBefore"]) / MICROSECOND),
            )
        except (ValueError, TypeError, KeyError) as err:
            raise ExportCertificateError(f"invalid certificate parameters {text!r}: {err}") from None

    @property
    def deadline(self) -> timedelta:
        """How long a pod serves before its certificate must be renewed."""
        return self.duration - self.renew_before


def _nanoseconds(value: timedelta) -> int:
    return (value.days * 86400 + value.seconds) * SECOND + value.microseconds * MICROSECOND


def cert_params(kubevirt: Mapping[str, Any] | None) -> CertParams:
    """The server certificates' lifetime per the KubeVirt CR's ``certificateRotateStrategy.selfSigned``."""
    if kubevirt is None:
        raise ExportCertificateError("no KubeVirt CR")
    raw = ((kubevirt.get("spec") or {}).get("certificateRotateStrategy") or {}).get("selfSigned")
    try:
        config = KubeVirtSelfSignConfiguration.from_dict(raw) if raw is not None else None
    except ApiParseError as err:
        raise ExportCertificateError(f"spec.certificateRotateStrategy.selfSigned.{err}") from None
    try:
        policy = rotation_policy(config)
    except CertificateError as err:  # names the field already
        raise ExportCertificateError(str(err)) from None
    return CertParams(duration=policy.cert_duration, renew_before=policy.cert_renew_before)


class ExportCA(Protocol):
    def current(self) -> KeyPair:
        """The export CA's pair in force; raises ExportCertificateError when there is none."""
        ...


class FileExportCA:
    """The export CA from the Secret virt-operator mounts, reloaded when virt-operator rotates it."""

    def __init__(self, directory: Path = CA_DIR, *, interval: float = 10.0) -> None:
        cert_file, key_file = directory / CERT_KEY, directory / KEY_KEY

        def build(_stamp: tuple[int, ...]) -> KeyPair:
            try:
                return load_pair_files(cert_file, key_file)
            except CertificateError as err:
                # Possibly caught mid-rotation: an OSError keeps the pair in use until the next look.
                raise OSError(str(err)) from None

        self._pair: Reloading[tuple[int, ...], KeyPair] = Reloading(
            lambda: modification_times(cert_file, key_file),
            build,
            log=get_logger(controller="export", ca=str(directory)),
            renewed="using a renewed export CA",
            interval=interval,
        )

    def current(self) -> KeyPair:
        try:
            return self._pair.current()
        except OSError as err:
            raise ExportCertificateError(f"the export CA is not available: {err}") from None


def certificate_secret_name(pod: Mapping[str, Any]) -> str:
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if volume.get("name") == CERTIFICATES_VOLUME:
            return str((volume.get("secret") or {}).get("secretName") or "")
    return ""


def certificate_secret(export: Mapping[str, Any], pod: Mapping[str, Any], ca: KeyPair, now: datetime) -> JSON:
    """The TLS Secret of ``pod``, owned by it: a server certificate for the export's service, for the
    lifetime recorded on the pod."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    recorded = annotations.get(ANN_CERT_PARAMS)
    if recorded is None:
        raise ExportCertificateError("pod missing cert parameter annotation")
    params = CertParams.deserialize(recorded)
    meta = export["metadata"]
    namespace = str(meta.get("namespace") or "")
    service = export_service_name(str(meta["name"]))
    spec = CertificateSpec(
        secret=certificate_secret_name(pod),
        kind="server",
        common_name=f"{service}.{namespace}.pod.{CLUSTER_DOMAIN}",
        service=service,
    )
    pair = new_certificate(spec, ca, namespace, now, params.duration)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": spec.secret,
            "namespace": namespace,
            "ownerReferences": [owner_ref("v1", "Pod", pod)],
        },
        "type": "kubernetes.io/tls",
        "data": {
            CERT_KEY: base64.b64encode(pair.cert_pem).decode(),
            KEY_KEY: base64.b64encode(pair.key_pem).decode(),
        },
    }
