"""cdi-uploadproxy's command line and process: CDI's environment variables, the token key required, files
checked before serving, and a clean exit on SIGTERM."""

from __future__ import annotations

import importlib.util
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from kubevirt.cdi import token
from kubevirt.cdi_uploadproxy import app
from kubevirt_testing.certificates import self_signed, write_pair
from kubevirt_testing.process import free_port

REPO = Path(__file__).resolve().parents[3]
ENTRYPOINT = REPO / "cmd" / "cdi-uploadproxy" / "__init__.py"
# Loads the entrypoint from its folder (installed, it is kubevirt_cmd.cdi_uploadproxy) and runs it.
LAUNCH = (
    "import importlib.util\n"
    f"spec = importlib.util.spec_from_file_location('cdi_uploadproxy_cmd', {str(ENTRYPOINT)!r})\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "module.main()\n"
)
PUBLIC_KEY = token.public_key_pem(token.new_signing_key().public_key()).decode()


def entrypoint() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cdi_uploadproxy_cmd", ENTRYPOINT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[app.Options]:
    seen: list[app.Options] = []

    def run(options: app.Options) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(app, "run", run)
    return seen


def test_cdis_environment_sets_the_files_and_the_bundle(captured: list[app.Options]) -> None:
    env = {
        "APISERVER_PUBLIC_KEY": PUBLIC_KEY,
        "SERVER_CERT_FILE": "/s/tls.crt",
        "SERVER_KEY_FILE": "/s/tls.key",
        "UPLOAD_CLIENT_CERT_FILE": "/c/tls.crt",
        "UPLOAD_CLIENT_KEY_FILE": "/c/tls.key",
        "UPLOAD_SERVER_CA_BUNDLE_CONFIG_MAP": "my-bundle",
    }
    result = CliRunner().invoke(entrypoint().main, ["-v=3"], env=env)
    assert result.exit_code == 0, result.output
    [options] = captured
    assert options == app.Options(
        public_key_pem=PUBLIC_KEY,
        tls_cert_file=Path("/s/tls.crt"),
        tls_key_file=Path("/s/tls.key"),
        client_cert_file=Path("/c/tls.crt"),
        client_key_file=Path("/c/tls.key"),
        ca_bundle_config_map="my-bundle",
    )


def test_the_defaults_are_cdis(captured: list[app.Options]) -> None:
    result = CliRunner().invoke(entrypoint().main, [], env={"APISERVER_PUBLIC_KEY": PUBLIC_KEY})
    assert result.exit_code == 0, result.output
    [options] = captured
    assert (options.listen, options.port) == ("0.0.0.0", 8443)
    assert options.tls_cert_file == Path("/var/run/certs/cdi-uploadproxy-server-cert/tls.crt")
    assert options.tls_key_file == Path("/var/run/certs/cdi-uploadproxy-server-cert/tls.key")
    assert options.client_cert_file == Path("/var/run/certs/cdi-uploadserver-client-cert/tls.crt")
    assert options.client_key_file == Path("/var/run/certs/cdi-uploadserver-client-cert/tls.key")
    assert options.ca_bundle_config_map == "cdi-uploadserver-signer-bundle"


def test_the_token_key_is_required(captured: list[app.Options]) -> None:
    result = CliRunner().invoke(entrypoint().main, [], env={"APISERVER_PUBLIC_KEY": None})
    assert result.exit_code == 2
    assert "APISERVER_PUBLIC_KEY not defined" in result.output
    assert captured == []


def test_missing_serving_files_or_a_bad_key_cannot_start(tmp_path: Path) -> None:
    missing = app.Options(
        public_key_pem=PUBLIC_KEY, tls_cert_file=tmp_path / "x", tls_key_file=tmp_path / "y"
    )
    assert app.run(missing) == app.EXIT_CANNOT_START
    cert, key = write_pair(self_signed("cdi-uploadproxy"), tmp_path)
    bad_key = app.Options(public_key_pem="not a key", tls_cert_file=cert, tls_key_file=key)
    assert app.run(bad_key) == app.EXIT_CANNOT_START


def _kubeconfig(path: Path) -> Path:
    # Never contacted: nothing is uploaded in this test.
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return path


def _healthz(port: int) -> str:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context, timeout=5) as answer:
        return str(answer.read().decode())


@pytest.mark.timeout(60)
def test_the_process_serves_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    cert, key = write_pair(self_signed("cdi-uploadproxy"), tmp_path)
    port = free_port()
    env: dict[str, Any] = {
        "PATH": os.environ.get("PATH", ""),
        "APISERVER_PUBLIC_KEY": PUBLIC_KEY,
        "SERVER_CERT_FILE": str(cert),
        "SERVER_KEY_FILE": str(key),
        "POD_NAMESPACE": "cdi",
    }
    args = ["--listen", "127.0.0.1", "--port", str(port), "-v=3"]
    args += ["--kubeconfig", str(_kubeconfig(tmp_path / "kubeconfig"))]
    with subprocess.Popen(
        [sys.executable, "-c", LAUNCH, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as process:
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    assert _healthz(port) == "OK"
                    break
                except OSError:
                    assert process.poll() is None, process.stdout.read() if process.stdout else ""
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0
        finally:
            if process.poll() is None:
                process.kill()
