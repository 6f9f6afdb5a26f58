"""virt-api trusts virt-handler's console server through the CA bundle virt-operator publishes
(ConfigMap ``kubevirt-ca``) when no CA file is given, as KubeVirt's virt-api does."""

from __future__ import annotations

import datetime
from pathlib import Path

from kubevirt.client import CONFIG_MAPS
from kubevirt.service.tls import read_ca_bundle
from kubevirt.virt_api.rest.wiring import HandlerTLS
from kubevirt.virt_operator.certificates import new_ca
from kubevirt_testing.fake_kube_api import FakeKubeApi

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def _ca_pem(name: str) -> str:
    return new_ca(name, NOW, datetime.timedelta(days=7)).cert_pem.decode()


def _subjects(tls: HandlerTLS, bundle: str | None) -> list[object]:
    return [cert["subject"] for cert in tls.contexts(lambda: bundle).current().get_ca_certs()]


def test_the_operators_bundle_is_read_and_trusted(tmp_path: Path) -> None:
    api = FakeKubeApi()
    ca = _ca_pem("kubevirt.io@1")
    api.add(
        CONFIG_MAPS, {"metadata": {"name": "kubevirt-ca", "namespace": "kubevirt"}, "data": {"ca-bundle": ca}}
    )
    bundle = read_ca_bundle(api, "kubevirt")
    assert bundle == ca
    tls = HandlerTLS(tmp_path / "tls.crt", tmp_path / "tls.key")
    assert _subjects(tls, bundle) == [((("commonName", "kubevirt.io@1"),),)]


def test_no_bundle_without_the_operator() -> None:
    assert read_ca_bundle(FakeKubeApi(), "kubevirt") is None


def test_a_given_ca_file_wins_over_the_bundle(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text(_ca_pem("from-file"))
    tls = HandlerTLS(tmp_path / "tls.crt", tmp_path / "tls.key", ca_file)
    assert _subjects(tls, _ca_pem("from-bundle")) == [((("commonName", "from-file"),),)]
