"""A real virt-exportserver on loopback over TLS, serving volumes made of real files in a temporary directory:
a filesystem volume holding ``disk.img``, a "block" volume (a file standing for the device node), a
directory volume served as ``dir/`` and ``disk.tar.gz``, and the VM's manifest ConfigMap."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import ssl
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kubevirt.export.paths import (
    DATA_VOLUME_KEY_PREFIX,
    EXPORT_NAME_KEY,
    INTERNAL_CA_KEY,
    INTERNAL_HOST_KEY,
    MANIFESTS_PATH,
    SECRET_DEFINITION_ENV,
    SECRET_MANIFEST_PATH,
    VM_DEFINITION_ENV,
    VM_MANIFEST_KEY,
    ServerPaths,
    volume_env,
)
from kubevirt.virt_exportserver.archive import TAR
from kubevirt.virt_exportserver.config import ServerConfig
from kubevirt.virt_exportserver.server import ExportServer, build_mux
from kubevirt_testing.certificates import self_signed, write_pair

TOKEN = "s3cr3t-token"
DISK = bytes(range(256)) * 4096 + b"tail of the disk"  # 1 MiB and a bit: more than one chunk
BLOCK = b"\x00" * 1000 + b"a block device's content" + b"\xff" * 3000
EXPORT = "my-export"
T = TypeVar("T")
INTERNAL_HOST = "virt-export-my-export.ns.svc"
CA_NAME = "export-ca-cm-my-export"


@dataclass(frozen=True)
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


@dataclass
class Exporter:
    port: int
    cert: Path
    root: Path
    token_file: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.cert))
        context.check_hostname = False
        return context

    def request(
        self,
        path: str,
        *,
        method: str = "GET",
        token: str | None = TOKEN,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """One request; the token in the header unless ``token`` is None. ``path`` is sent as is."""
        sent = dict(headers or {})
        if token is not None:
            sent["x-kubevirt-export-token"] = token
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context(), timeout=30)
        try:
            conn.request(method, path, headers=sent)
            reply = conn.getresponse()
            return Reply(reply.status, reply.headers, reply.read())
        finally:
            conn.close()


def write_volumes(root: Path) -> dict[str, str]:
    """The volumes and the environment the controller would give the server for them."""
    fs_volume = root / "export-volumes" / "fs-disk"
    fs_volume.mkdir(parents=True)
    (fs_volume / "disk.img").write_bytes(DISK)
    block_volume = root / "dev" / "block-disk"
    block_volume.parent.mkdir()
    block_volume.write_bytes(BLOCK)
    files = root / "export-volumes" / "files"
    (files / "sub" / "deeper").mkdir(parents=True)
    (files / "lost+found").mkdir()
    (files / "a.txt").write_text("alpha\n")
    (files / "b & <c>.txt").write_text("needs escaping\n")
    (files / "sub" / "nested.json").write_text('{"n": 1}')
    (files / "sub" / "deeper" / "index.html").write_text("<html>index</html>")
    (files / "escape-absolute").symlink_to("/etc/passwd")
    (files / "escape-relative").symlink_to("../../../../../../../etc/passwd")
    (files / "inside").symlink_to("a.txt")
    os.mkfifo(files / "pipe")
    (root / "outside.txt").write_text("must never be served\n")
    return {
        **volume_env(0, str(fs_volume), "fs-disk", raw=True),
        **volume_env(1, str(block_volume), "block-disk", raw=True),
        **volume_env(2, str(files), "files", raw=False),
        VM_DEFINITION_ENV: MANIFESTS_PATH,
        SECRET_DEFINITION_ENV: SECRET_MANIFEST_PATH,
    }


def write_manifests(directory: Path) -> None:
    """The ConfigMap's files as the kubelet lays them out: each key a symlink into ``..data``."""
    data = directory / "..2024_01_01"
    data.mkdir(parents=True)
    (directory / "..data").symlink_to(data.name)
    vm = {
        "metadata": {"name": "vm1", "namespace": "ns", "creationTimestamp": None},
        "spec": {
            "dataVolumeTemplates": [
                {"metadata": {"name": "fs-disk"}, "spec": {"source": {"http": {"url": ""}}, "storage": {}}}
            ],
            "template": {
                "spec": {
                    "volumes": [
                        {"name": "root", "dataVolume": {"name": "fs-disk"}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": "block-disk"}},
                        {"name": "cloud", "cloudInitNoCloud": {"userData": "#cloud-config\nuser: y\n"}},
                    ]
                }
            },
        },
        "status": {},
    }
    dv = {
        "metadata": {"name": "block-disk", "namespace": "ns", "creationTimestamp": None},
        "spec": {"source": {"http": {"url": ""}}, "storage": {"volumeMode": "Block"}},
        "status": {},
    }
    ca = {"metadata": {"name": CA_NAME, "creationTimestamp": None}, "data": {"ca.pem": "PEM"}}
    keys = {
        EXPORT_NAME_KEY: EXPORT,
        INTERNAL_HOST_KEY: INTERNAL_HOST,
        INTERNAL_CA_KEY: json.dumps(ca),
        VM_MANIFEST_KEY: json.dumps(vm),
        DATA_VOLUME_KEY_PREFIX + "block-disk": json.dumps(dv),
    }
    for key, value in keys.items():
        (data / key).write_text(value)
        (directory / key).symlink_to(f"..data/{key}")


class ServerThread:
    """An :class:`ExportServer` on an event loop of its own thread."""

    def __init__(self, config: ServerConfig, tar: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = ExportServer(config, build_mux(config, tar))
        self.call(self.server.start())

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def stop(self) -> None:
        self.call(self.server.shutdown(grace=5))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@contextlib.contextmanager
def exporter_running(root: Path, tar: str = TAR) -> Iterator[Exporter]:
    """The volumes and manifests written under ``root``, served until the block ends."""
    cert, key = write_pair(self_signed("virt-export-my-export"), root)
    token_file = root / "token"
    token_file.write_text(TOKEN)
    env = write_volumes(root)
    write_manifests(root / "manifest_data")
    config = ServerConfig(
        cert_file=cert,
        key_file=key,
        token_file=token_file,
        paths=ServerPaths.from_env(env),
        host="127.0.0.1",
        port=0,
        manifest_dir=root / "manifest_data",
    )
    running = ServerThread(config, tar)
    try:
        yield Exporter(running.server.port, cert, root, token_file)
    finally:
        running.stop()
