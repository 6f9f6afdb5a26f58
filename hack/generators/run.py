"""Runs every generator in this folder; ``--check`` reports stale generated files instead of writing.

A generator is a module here (not starting with ``_`` and not this file) with a function
``generate(root: Path) -> dict[Path, bytes]`` returning the files it owns, relative to the repository.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _load_generators() -> list[tuple[str, object]]:
    modules = []
    for path in sorted(HERE.glob("*.py")):
        if path.name.startswith("_") or path.name == "run.py":
            continue
        spec = importlib.util.spec_from_file_location(f"generator_{path.stem}", path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append((path.stem, module))
    return modules


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if generated files are stale")
    args = parser.parse_args()
    stale: list[Path] = []
    for name, module in _load_generators():
        files: dict[Path, bytes] = module.generate(ROOT)  # type: ignore[attr-defined]
        for relative, content in sorted(files.items()):
            target = ROOT / relative
            current = target.read_bytes() if target.exists() else None
            if current == content:
                continue
            if args.check:
                stale.append(relative)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
                print(f"{name}: wrote {relative}")
    if stale:
        for relative in stale:
            print(f"stale generated file: {relative} (run hack/generate)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
