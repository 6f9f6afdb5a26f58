"""The tools KubeVirt's functional tests run in a failed spec's pods are in our images, by both recipes.

On a failure KubeVirt's suite runs ``ps``, ``ip`` and ``bridge`` in virt-launcher's compute container and
``pgrep`` in virt-handler's pod. Checked on ``Dockerfile.build`` (the packages each target's stages
install) and on ``hack/build-images`` (the packages the layers of each image install), without building.
The DataVolume importer's ``qemu-img`` and every image's user are checked the same way.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import images, oci, recipe  # noqa: E402

# The Debian bookworm package that ships each tool.
PACKAGE_OF = {"ps": "procps", "pgrep": "procps", "ip": "iproute2", "bridge": "iproute2"}
TOOLS = {"virt-launcher": ("ps", "pgrep", "ip", "bridge"), "virt-handler": ("ps", "pgrep")}
# Images that need none of them do not carry them.
WITHOUT = (
    "virt-api",
    "virt-controller",
    "virt-operator",
    "virtctl",
    "virt-exportproxy",
    "virt-exportserver",
    "cdi-controller",
    "cdi-importer",
)
_INSTALL = re.compile(r"apt-get install -y --no-install-recommends ([^&]+)")


def _installed(commands: list[str]) -> set[str]:
    packages: set[str] = set()
    for command in commands:
        for match in _INSTALL.finditer(command):
            packages.update(match.group(1).split())
    return packages


def _dockerfile_packages(target: str) -> set[str]:
    """The packages ``apt-get install``ed by the target's stage and every stage it is built FROM."""
    stages: dict[str, tuple[str, list[str]]] = {}
    current = ""
    for line in recipe.dockerfile().splitlines():
        if line.startswith("FROM "):
            _, parent, _, current = line.split()
            stages[current] = (parent, [])
        elif line.startswith("RUN "):
            stages[current][1].append(line)
    commands: list[str] = []
    stage = target
    while stage in stages:
        stage, runs = stages[stage]
        commands += runs
    return _installed(commands)


class _RecordingBuilder(images.Builder):
    """Composes the images as ``hack/build-images`` does, recording each image's layers instead of
    running debootstrap, chroots and archiving."""

    def __init__(self) -> None:
        self.steps: dict[str, tuple[str, ...]] = {}
        self.images: dict[str, list[images.BuiltLayer]] = {}
        self.configs: dict[str, oci.ImageConfig] = {}

    def _layer(self, name: str, steps: tuple[str, ...]) -> images.BuiltLayer:
        key = f"{name}-{len(self.steps)}"
        self.steps[key] = steps
        return images.BuiltLayer(key, Path("/nonexistent") / key, oci.Layer(Path("/nonexistent"), key, 0))

    def debian(self) -> images.BuiltLayer:
        return self._layer("debian", ())

    def pause_layer(self) -> images.BuiltLayer:
        return self._layer("pause", ())

    def run_stage(
        self,
        name: str,
        parents: list[images.BuiltLayer],
        steps: tuple[str, ...],
        *,
        binds: dict[str, Path] | None = None,
        inputs: str = "",
    ) -> images.BuiltLayer:
        return self._layer(name, steps)

    def wheels(self) -> tuple[Path, str]:
        return Path("/nonexistent/wheels"), "wheels"

    def container_disk(self) -> tuple[Path, str]:
        return Path("/nonexistent/container-disk"), "container-disk"

    def archive(
        self, name: str, file_stem: str, layers: list[images.BuiltLayer], config: Any
    ) -> images.BuiltImage:
        self.images[file_stem] = layers
        self.configs[file_stem] = config
        return images.BuiltImage(name, Path("/nonexistent") / file_stem, file_stem, 0)

    def _prune(self, used: set[str]) -> None:
        pass


@pytest.fixture(scope="module")
def builder() -> _RecordingBuilder:
    recording = _RecordingBuilder()
    recording._build([target.binary for target in recipe.TARGETS])
    return recording


@pytest.fixture(scope="module")
def built_packages(builder: _RecordingBuilder) -> dict[str, set[str]]:
    return {
        image: _installed([step for layer in layers for step in builder.steps[layer.key]])
        for image, layers in builder.images.items()
    }


@pytest.mark.parametrize("image", sorted(TOOLS))
def test_the_dockerfile_target_installs_the_tools(image: str) -> None:
    assert {PACKAGE_OF[tool] for tool in TOOLS[image]} <= _dockerfile_packages(image)


@pytest.mark.parametrize("image", sorted(TOOLS))
def test_the_built_image_installs_the_tools(image: str, built_packages: dict[str, set[str]]) -> None:
    assert {PACKAGE_OF[tool] for tool in TOOLS[image]} <= built_packages[image]


@pytest.mark.parametrize("image", WITHOUT)
def test_the_other_images_stay_without_them(image: str, built_packages: dict[str, set[str]]) -> None:
    assert not set(PACKAGE_OF.values()) & _dockerfile_packages(image)
    assert not set(PACKAGE_OF.values()) & built_packages[image]


def test_both_recipes_install_the_same_packages_per_image(built_packages: dict[str, set[str]]) -> None:
    for target in recipe.TARGETS:
        assert built_packages[target.binary] == _dockerfile_packages(target.binary), target.binary


def test_the_importer_image_alone_has_qemu_img_by_both_recipes(built_packages: dict[str, set[str]]) -> None:
    assert "qemu-utils" in _dockerfile_packages("cdi-importer")
    assert "qemu-utils" in built_packages["cdi-importer"]
    assert "qemu-utils" not in built_packages["cdi-controller"]


def _dockerfile_users() -> dict[str, str]:
    users: dict[str, str] = {}
    current = ""
    for line in recipe.dockerfile().splitlines():
        if line.startswith("FROM "):
            current = line.split()[-1]
        elif line.startswith("USER "):
            users[current] = line.split()[1]
    return users


def test_both_recipes_give_each_image_the_same_user(builder: _RecordingBuilder) -> None:
    users = _dockerfile_users()
    for target in recipe.TARGETS:
        assert builder.configs[target.binary].user == users.get(target.binary, ""), target.binary
    # The importer's pods run as the qemu user, the controller's as the other components' non-root one.
    assert (users["cdi-importer"], users["cdi-controller"]) == ("107", "1001")
