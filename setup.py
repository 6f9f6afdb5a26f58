"""Package discovery for the three source roots; everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent

# Library roots: the folder of each importable top-level package.
LIBRARY_ROOTS = {
    "kubevirt": "pkg",
    "kubevirt_api": "staging/src/kubevirt.io/api",
}


def discover() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = dict(LIBRARY_ROOTS)
    for name, root in LIBRARY_ROOTS.items():
        packages.append(name)
        packages += [f"{name}.{sub}" for sub in find_packages(where=str(HERE / root))]
    # cmd/<binary>/ folders are named like the binaries (often hyphenated); each becomes the
    # importable package kubevirt_cmd.<binary_with_underscores>. `cmd` itself is no package, so it
    # never shadows the standard library's `cmd` module.
    package_dir["kubevirt_cmd"] = "cmd"
    for entry in sorted((HERE / "cmd").iterdir()):
        if (entry / "__init__.py").exists():
            importable = f"kubevirt_cmd.{entry.name.replace('-', '_')}"
            packages.append(importable)
            package_dir[importable] = f"cmd/{entry.name}"
    return packages, package_dir


PACKAGES, PACKAGE_DIR = discover()

setup(packages=PACKAGES, package_dir=PACKAGE_DIR, include_package_data=True)
