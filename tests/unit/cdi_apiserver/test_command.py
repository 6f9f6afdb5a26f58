"""The cdi-apiserver command: its flags and CDI's environment variables become the process options."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from kubevirt.cdi_apiserver import app

ROOT = Path(__file__).resolve().parents[3]


def _command() -> ModuleType:
    # Loaded from its folder: the console script needs the project reinstalled to know a new binary.
    spec = importlib.util.spec_from_file_location("cdi_apiserver_cmd", ROOT / "cmd/cdi-apiserver/__init__.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _options(monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str]) -> app.Options:
    seen: list[app.Options] = []

    def run(options: app.Options) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(app, "run", run)
    for name in ("CERT_FILE", "KEY_FILE", "KUBECONFIG", "INSTALLER_PART_OF_LABEL", "INSTALLER_VERSION_LABEL"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(_command().main, args, env=env)
    assert result.exit_code == 0, result.output
    [options] = seen
    return options


def test_defaults_are_cdis(monkeypatch: pytest.MonkeyPatch) -> None:
    options = _options(monkeypatch, [], {})
    assert options.port == 8443
    assert options.listen == "0.0.0.0"
    assert options.tls_cert_file == Path("/var/run/certs/cdi-apiserver-server-cert/tls.crt")
    assert options.tls_key_file == Path("/var/run/certs/cdi-apiserver-server-cert/tls.key")
    assert options.kubeconfig is None
    assert options.namespace is None
    assert dict(options.installer_labels) == {}


def test_go_style_verbosity_and_cdis_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "CERT_FILE": "/certs/c.crt",
        "KEY_FILE": "/certs/c.key",
        "KUBECONFIG": "/kube/config",
        "INSTALLER_PART_OF_LABEL": "kubevirt",
        "INSTALLER_VERSION_LABEL": "v1",
    }
    options = _options(monkeypatch, ["-v=3", "--namespace", "cdi"], env)
    assert (options.tls_cert_file, options.tls_key_file) == (Path("/certs/c.crt"), Path("/certs/c.key"))
    assert options.kubeconfig == "/kube/config"
    assert options.namespace == "cdi"
    assert dict(options.installer_labels) == {
        "app.kubernetes.io/part-of": "kubevirt",
        "app.kubernetes.io/version": "v1",
    }


def test_flags_win_over_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    options = _options(
        monkeypatch, ["--tls-cert-file", "/a.crt", "--port", "9443"], {"CERT_FILE": "/certs/c.crt"}
    )
    assert (options.tls_cert_file, options.port) == (Path("/a.crt"), 9443)


def test_missing_certificate_files_stop_the_process_before_any_cluster_call(tmp_path: Path) -> None:
    options = app.Options(tls_cert_file=tmp_path / "tls.crt", tls_key_file=tmp_path / "tls.key")
    assert app.run(options) == app.EXIT_CANNOT_START
