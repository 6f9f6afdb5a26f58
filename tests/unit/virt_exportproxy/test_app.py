"""virt-exportproxy's process: exports, the export CA and the KubeVirt CR read through informers (the CA and
the CR in the install namespace only), the listener following ``tlsConfiguration``, and the command line."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner

from kubevirt.client.resources import Resource
from kubevirt.virt_exportproxy.app import EXIT_CANNOT_START, ExportProxyApp, Options
from kubevirt_cmd.virt_exportproxy import main
from kubevirt_testing.certificates import self_signed, write_pair
from kubevirt_testing.export_proxy import (
    NS,
    ToLoopback,
    ca_config_map,
    export,
    export_server,
    new_export_ca,
    proxy_client,
)
from kubevirt_testing.listwatch import FakeWatch

JSON = dict[str, Any]
INSTALL_NS = "kubevirt"


class ClusterListWatcher:
    """Lists what the test put in per resource and namespace (honouring a metadata.name field selector);
    watches stay quiet until closed. Records what was listed."""

    def __init__(self, objects: dict[str, list[JSON]]) -> None:
        self.objects = objects
        self.listed: list[tuple[str, str | None, str | None]] = []

    def list_raw(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
    ) -> bytes:
        self.listed.append((resource.plural, namespace, field_selector))
        items = [
            obj
            for obj in self.objects.get(resource.plural, [])
            if namespace in (None, obj["metadata"].get("namespace"))
            and field_selector in (None, f"metadata.name={obj['metadata']['name']}")
        ]
        return json.dumps({"metadata": {"resourceVersion": "1"}, "items": items}).encode()

    def watch(self, resource: Resource, namespace: str | None = None, **_options: Any) -> FakeWatch:
        return FakeWatch()


def _kubevirt(min_tls: str) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": INSTALL_NS, "resourceVersion": "5"},
        "spec": {"configuration": {"tlsConfiguration": {"minTLSVersion": min_tls}}},
    }


def _export_json(namespace: str = NS) -> JSON:
    obj: JSON = export().model_dump(by_alias=True, exclude_none=True, mode="json")
    obj["metadata"]["namespace"] = namespace
    return obj


def test_the_proxy_serves_what_the_informers_hold_under_the_clusters_tls_settings(tmp_path: Path) -> None:
    ca = new_export_ca()
    stray_ca = ca_config_map(new_export_ca())
    stray_ca["metadata"]["namespace"] = "elsewhere"  # the same name outside the install namespace
    cluster = ClusterListWatcher(
        {
            "virtualmachineexports": [_export_json()],
            "configmaps": [stray_ca, ca_config_map(ca)],
            "kubevirts": [_kubevirt("VersionTLS13")],
        }
    )
    proxy_pair = self_signed("virt-exportproxy")
    cert_file, key_file = write_pair(proxy_pair, tmp_path, "proxy")
    options = Options(listen="127.0.0.1", port=0, tls_cert_file=cert_file, tls_key_file=key_file)

    async def scenario() -> None:
        async with export_server(tmp_path, ca) as (_server, backend_port):
            app = ExportProxyApp(
                options, cluster, INSTALL_NS, backend_port=backend_port, resolver=ToLoopback()
            )
            assert await asyncio.to_thread(app.start_informers)
            listening = await app.listen()
            url = f"https://127.0.0.1:{listening.port}/api/export.kubevirt.io/v1beta1/namespaces/{NS}/"
            try:
                async with proxy_client(proxy_pair) as client:
                    async with client.get(url + "virtualmachineexports/vm1/echo") as response:
                        assert (response.status, await response.text()) == (200, "echoed")
                    async with client.get(url + "virtualmachineexports/other/echo") as response:
                        assert response.status == 404
                # minTLSVersion VersionTLS13 from the CR: a TLS 1.2 client is refused.
                old = ssl.create_default_context(cadata=proxy_pair.cert_pem.decode())
                old.maximum_version = ssl.TLSVersion.TLSv1_2
                async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=old)) as client:
                    with pytest.raises(aiohttp.ClientConnectorError):
                        await client.get(url + "virtualmachineexports/vm1/echo")
            finally:
                await listening.close()
                app.stop()

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))
    assert ("virtualmachineexports", None, None) in cluster.listed
    assert ("configmaps", INSTALL_NS, "metadata.name=kubevirt-export-ca") in cluster.listed
    assert ("kubevirts", INSTALL_NS, None) in cluster.listed


def test_the_command_refuses_missing_certificate_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["--tls-cert-file", str(tmp_path / "none.crt"), "--tls-key-file", str(tmp_path / "none.key")],
    )
    assert result.exit_code == EXIT_CANNOT_START


@pytest.mark.parametrize("interval", ["0", "-1", "nan", "soon"])
def test_the_command_refuses_a_bad_reload_interval(interval: str) -> None:
    result = CliRunner().invoke(main, ["--cert-reload-interval", interval])
    assert result.exit_code == 2
    assert "--cert-reload-interval" in result.output
    assert "Traceback" not in result.output
