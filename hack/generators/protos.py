"""Python stubs for the handler <-> launcher gRPC protocols (``pkg/handler_launcher_com/**/*.proto``).

Runs grpcio-tools' protoc with the mypy-protobuf plugins, so the messages and services come with
``.pyi`` stubs that ``mypy --strict`` can check callers against. The proto files are mapped under the
``kubevirt`` import name, so the generated modules import each other as ``kubevirt.handler_launcher_com...``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

PROTO_ROOT = Path("pkg/handler_launcher_com")
IMPORT_PREFIX = Path("kubevirt/handler_launcher_com")


def _plugin(name: str) -> str:
    # The plugins are installed next to the interpreter running the generator (the project's venv).
    candidate = Path(sys.executable).parent / name
    found = str(candidate) if candidate.exists() else shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: install the dev dependencies (hack/setup)")
    return found


def generate(root: Path) -> dict[Path, bytes]:
    from grpc_tools import protoc  # a dev dependency: imported only when generating

    protos = sorted((root / PROTO_ROOT).rglob("*.proto"))
    include = str(Path(protoc.__file__).parent / "_proto")
    files: dict[Path, bytes] = {}
    with tempfile.TemporaryDirectory() as out:
        for proto in protos:
            virtual = IMPORT_PREFIX / proto.relative_to(root / PROTO_ROOT)
            args = [
                "protoc",
                f"-I{IMPORT_PREFIX}={root / PROTO_ROOT}",
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
            relative = produced.relative_to(Path(out) / IMPORT_PREFIX)
            files[PROTO_ROOT / relative] = produced.read_bytes()
    return files
