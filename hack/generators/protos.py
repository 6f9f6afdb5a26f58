"""Python stubs for the gRPC protocols: handler <-> launcher (``pkg/handler_launcher_com/**/*.proto``) and
the kubelet's device plugin API (``pkg/virt_handler/device_manager/deviceplugin/**/*.proto``), and for the
local cluster's hostpath CSI driver the CSI spec and the kubelet's plugin registration API
(``hack/cluster/localcluster/csi/proto/*.proto``, imported as ``localcluster.csi.proto``).

Runs grpcio-tools' protoc with the mypy-protobuf plugins, so the messages and services come with
``.pyi`` stubs that ``mypy --strict`` can check callers against. The proto files are mapped under the
``kubevirt`` import name, so the generated modules import each other as ``kubevirt.<package>...``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

# Each proto tree and the import name its modules get.
PROTO_ROOTS = (
    (Path("pkg/handler_launcher_com"), Path("kubevirt/handler_launcher_com")),
    (
        Path("pkg/virt_handler/device_manager/deviceplugin"),
        Path("kubevirt/virt_handler/device_manager/deviceplugin"),
    ),
    (Path("hack/cluster/localcluster/csi/proto"), Path("localcluster/csi/proto")),
)


def _plugin(name: str) -> str:
    # The plugins are installed next to the interpreter running the generator (the project's venv).
    candidate = Path(sys.executable).parent / name
    found = str(candidate) if candidate.exists() else shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: install the dev dependencies (hack/setup)")
    return found


def generate(root: Path) -> dict[Path, bytes]:
    files: dict[Path, bytes] = {}
    for proto_root, import_prefix in PROTO_ROOTS:
        files.update(_generate_tree(root, proto_root, import_prefix))
    return files


def _generate_tree(root: Path, proto_root: Path, import_prefix: Path) -> dict[Path, bytes]:
    from grpc_tools import protoc  # a dev dependency: imported only when generating

    protos = sorted((root / proto_root).rglob("*.proto"))
    include = str(Path(protoc.__file__).parent / "_proto")
    files: dict[Path, bytes] = {}
    with tempfile.TemporaryDirectory() as out:
        for proto in protos:
            virtual = import_prefix / proto.relative_to(root / proto_root)
            args = [
                "protoc",
                f"-I{import_prefix}={root / proto_root}",
                f"-I{include}",
                f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
                f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
                f"--python_out={out}",
                f"--grpc_python_out={out}",
                f"--mypy_out=quiet:{out}",
                f"--mypy_grpc_out=quiet:{out}",
                str(virtual),
            ]
            if protoc.main(args) != 0:
                raise RuntimeError(f"protoc failed on {proto}")
        for produced in sorted(Path(out).rglob("*_pb2*")):
            relative = produced.relative_to(Path(out) / import_prefix)
            files[proto_root / relative] = produced.read_bytes()
    return files
