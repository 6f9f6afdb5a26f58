"""The export server's certificate parameters and the export CA read from virt-operator's mounted Secret."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kubevirt.service.certs import new_ca
from kubevirt.virt_controller.watch.export.certs import (
    CertParams,
    ExportCertificateError,
    FileExportCA,
    cert_params,
)
from kubevirt_testing.certificates import write_pair


def test_parameters_default_to_a_day_renewed_with_a_fifth_left() -> None:
    params = cert_params({"spec": {}})
    assert (params.duration, params.renew_before) == (timedelta(days=1), timedelta(hours=4.8))
    assert params.serialize() == '{"Duration":86400000000000,"RenewBefore":17280000000000}'
    assert CertParams.deserialize(params.serialize()) == params


def test_parameters_follow_the_kubevirt_crs_server_settings() -> None:
    strategy = {
        "selfSigned": {"certRotateInterval": "10h", "server": {"duration": "20h", "renewBefore": "1h30m"}}
    }
    params = cert_params({"spec": {"certificateRotateStrategy": strategy}})
    # The deprecated interval still wins, as in KubeVirt.
    assert (params.duration, params.renew_before) == (timedelta(hours=10), timedelta(minutes=90))
    assert params.deadline == timedelta(hours=8, minutes=30)


def test_bad_parameters_name_the_field() -> None:
    strategy = {"selfSigned": {"server": {"duration": "soon"}}}
    with pytest.raises(ExportCertificateError, match=r"selfSigned.*server\.duration"):
        cert_params({"spec": {"certificateRotateStrategy": strategy}})
    with pytest.raises(ExportCertificateError, match=r"certificateRotateStrategy\.selfSigned\.server: "):
        cert_params({"spec": {"certificateRotateStrategy": {"selfSigned": {"server": 5}}}})
    with pytest.raises(ExportCertificateError, match="no KubeVirt CR"):
        cert_params(None)
    with pytest.raises(ExportCertificateError, match="invalid certificate parameters"):
        CertParams.deserialize("{}")


def test_the_export_ca_is_read_from_its_files_and_follows_a_rotation(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    first = new_ca("export.kubevirt.io", now, timedelta(days=7))
    write_pair(first, tmp_path)
    ca = FileExportCA(tmp_path, interval=0)
    assert ca.current().cert == first.cert

    second = new_ca("export.kubevirt.io", now, timedelta(days=7))
    write_pair(second, tmp_path)
    for path in tmp_path.iterdir():  # a rotation lands with a new modification time
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert ca.current().cert == second.cert


def test_a_missing_export_ca_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExportCertificateError, match="export CA is not available"):
        FileExportCA(tmp_path).current()
