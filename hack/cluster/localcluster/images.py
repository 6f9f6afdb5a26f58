"""hack/build-images: the recipe's images built without a container engine.

Layers are overlayfs upper directories: ``debootstrap`` makes the Debian root filesystem (what the
Dockerfile's ``FROM debian`` stands for), then each stage's commands run in a chroot on an overlay of the
layers below. Every layer is cached under ``$KUBEVIRT_CACHE/images/layers/<key>``, the key hashing its
parent, its commands and its inputs, so an unchanged stage is never rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from . import imageserver, oci, recipe, testguest
from .hostfs import mounts_under, unmount_all
from .imageserver import files as served_files
from .layout import IMAGE_PREFIX, IMAGE_TAG, PAUSE_IMAGE, REPO, Layout, Node, image_name
from .sharing import locked
from .timing import Timer

TEST_GUEST_DISK_IMAGE = "test-guest-container-disk"
TEST_GUEST_KERNEL_IMAGE = "test-guest-kernel-boot"
# The CirrOS-, Alpine- and Fedora-compatible guests are containerDisks named as their flavours.
COMPATIBLE_GUEST_IMAGES = (
    testguest.CIRROS_COMPATIBLE.name,
    testguest.ALPINE_COMPATIBLE.name,
    testguest.FEDORA_COMPATIBLE.name,
)
TEST_GUEST_IMAGES = (TEST_GUEST_DISK_IMAGE, TEST_GUEST_KERNEL_IMAGE, *COMPATIBLE_GUEST_IMAGES)
QEMU_UID = 107
CHROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class BuiltLayer:
    key: str
    fs: Path
    layer: oci.Layer


@dataclass(frozen=True)
class BuiltImage:
    name: str
    archive: Path
    digest: str
    size: int


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _run(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise RuntimeError(f"{' '.join(argv)[:200]} failed ({result.returncode}):\n{tail}")


def debian_mirror() -> str | None:
    """The host's Debian mirror, so debootstrap uses what apt on this machine uses."""
    for source in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for match in re.finditer(r"^URIs:\s*(\S+)", source.read_text(), re.MULTILINE):
            if match.group(1).rstrip("/").endswith("/debian"):
                return match.group(1)
    legacy = Path("/etc/apt/sources.list")
    if legacy.exists():
        found = re.search(r"^deb\s+(\S+/debian)\s+", legacy.read_text(), re.MULTILINE)
        if found:
            return found.group(1)
    return None


# Like Debian's slim container images (what Dockerfile.build starts from): packages installed later leave
# out documentation, manuals and translations, except the copyright files.
SLIM_DPKG_CONFIG = """path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
"""


def _slim(rootfs: Path) -> None:
    """Applies SLIM_DPKG_CONFIG to what debootstrap already installed and keeps it for later stages."""
    (rootfs / "etc/dpkg/dpkg.cfg.d/slim-image").write_text(SLIM_DPKG_CONFIG)
    share = rootfs / "usr/share"
    for path in list((share / "doc").rglob("*")):
        if (path.is_symlink() or path.is_file()) and path.name != "copyright":
            path.unlink()
    for folder in ("man", "info", "locale"):
        for entry in (share / folder).glob("*"):
            if entry.name == "locale.alias":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()


class Builder:
    def __init__(self, layout: Layout, *, log: bool = True) -> None:
        self.root = layout.cache / "images"
        self.layers = self.root / "layers"
        self.archives = self.root / "archives"
        self.timer = Timer(quiet=not log)

    def _cached(self, key: str) -> BuiltLayer | None:
        meta = self.layers / key / "layer.json"
        if not meta.exists():
            return None
        loaded = json.loads(meta.read_text())
        layer = oci.Layer(path=self.layers / key / "layer.tar", digest=loaded["digest"], size=loaded["size"])
        return BuiltLayer(key=key, fs=self.layers / key / "fs", layer=layer)

    def _finish(self, key: str, fs_partial: Path, stage: str) -> BuiltLayer:
        directory = self.layers / key
        layer = oci.write_layer(fs_partial, directory / "layer.tar")
        fs_partial.rename(directory / "fs")
        meta = {"digest": layer.digest, "size": layer.size, "stage": stage}
        (directory / "layer.json").write_text(json.dumps(meta))
        return BuiltLayer(key=key, fs=directory / "fs", layer=layer)

    def debian(self) -> BuiltLayer:
        mirror = debian_mirror()
        key = _key("debootstrap", "minbase", recipe.DEBIAN_SUITE, mirror or "", SLIM_DPKG_CONFIG)
        if cached := self._cached(key):
            return cached
        directory = self.layers / key
        _discard(directory)
        directory.mkdir(parents=True)
        fs = directory / "fs.partial"
        with self.timer.step(f"debootstrap {recipe.DEBIAN_SUITE}"):
            _run(
                [
                    "debootstrap",
                    "--variant=minbase",
                    recipe.DEBIAN_SUITE,
                    str(fs),
                    *([mirror] if mirror else []),
                ]
            )
            # Package caches are not part of an image.
            for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
                shutil.rmtree(fs / cache, ignore_errors=True)
                (fs / cache / "partial").mkdir(parents=True)
            _slim(fs)
            (fs / "etc/resolv.conf").write_text("")
            (fs / "etc/hostname").write_text("")
            return self._finish(key, fs, "debian")

    def run_stage(
        self,
        name: str,
        parents: list[BuiltLayer],
        steps: tuple[str, ...],
        *,
        binds: dict[str, Path] | None = None,
        inputs: str = "",
    ) -> BuiltLayer:
        """The layer that ``steps`` add on top of ``parents`` (cached by parents, steps and inputs)."""
        binds = binds or {}
        key = _key(name, *(parent.key for parent in parents), *steps, inputs)
        if cached := self._cached(key):
            return cached
        directory = self.layers / key
        _discard(directory)
        directory.mkdir(parents=True)
        upper, work, merged = directory / "fs.partial", directory / "work", directory / "merged"
        for path in (upper, work, merged):
            path.mkdir()
        created_mount_points = []
        with self.timer.step(f"stage {name}"), ExitStack() as mounts:
            lower = ":".join(str(parent.fs) for parent in reversed(parents))
            options = f"lowerdir={lower},upperdir={upper},workdir={work}"
            _run(["mount", "-t", "overlay", "overlay", "-o", options, str(merged)])
            mounts.callback(_run, ["umount", str(merged)])
            _run(["mount", "-t", "proc", "proc", str(merged / "proc")])
            mounts.callback(_run, ["umount", str(merged / "proc")])
            _run(["mount", "--bind", "/dev", str(merged / "dev")])
            mounts.callback(_run, ["umount", str(merged / "dev")])
            _run(["mount", "--bind", "/etc/resolv.conf", str(merged / "etc/resolv.conf")])
            mounts.callback(_run, ["umount", str(merged / "etc/resolv.conf")])
            for target, bound in binds.items():
                point = merged / target.lstrip("/")
                if not point.exists():
                    point.mkdir(parents=True)
                    created_mount_points.append(target.lstrip("/"))
                _run(["mount", "--bind", "-o", "ro", str(bound), str(point)])
                mounts.callback(_run, ["umount", str(point)])
            env = {"PATH": CHROOT_PATH, "HOME": "/root", "LANG": "C.UTF-8"}
            for step in steps:
                _run(["chroot", str(merged), "/bin/sh", "-ec", step], env=env)
        for created in created_mount_points:
            (upper / created).rmdir()
        shutil.rmtree(work)
        merged.rmdir()
        return self._finish(key, upper, name)

    def wheels(self) -> tuple[Path, str]:
        """The wheelhouse: dependencies cached by the packaging files, the project's wheel always fresh.
        Returns its directory and a digest of its contents."""
        packaging = hashlib.sha256((REPO / "pyproject.toml").read_bytes() + (REPO / "setup.py").read_bytes())
        house = self.root / "wheels" / packaging.hexdigest()[:24]
        builder = self.root / "wheel-builder"
        with self.timer.step("wheels"):
            if not house.exists():
                partial = house.with_suffix(".partial")
                shutil.rmtree(partial, ignore_errors=True)
                command = recipe.WHEEL_COMMAND.format(builder=builder, wheels=partial, options="")
                _run(["sh", "-ec", command], cwd=REPO)
                partial.rename(house)
                for other in house.parent.iterdir():
                    if other != house:
                        shutil.rmtree(other)
            project = recipe.PROJECT.replace("-", "_")
            for old in house.glob(f"{project}-*.whl"):
                old.unlink()
            with tempfile.TemporaryDirectory() as fresh, tempfile.TemporaryDirectory() as source:
                command = recipe.WHEEL_COMMAND.format(builder=builder, wheels=fresh, options="--no-deps ")
                _run(["sh", "-ec", command], cwd=_source_copy(Path(source)))
                for wheel in Path(fresh).glob("*.whl"):
                    shutil.copy(wheel, house / wheel.name)
        digest = hashlib.sha256()
        for wheel in sorted(house.glob("*.whl")):
            digest.update(wheel.name.encode() + hashlib.sha256(wheel.read_bytes()).digest())
        return house, digest.hexdigest()

    def container_disk(self) -> tuple[Path, str]:
        """The launcher image's static executables (container-disk and virt-launcher-monitor's front),
        compiled on this host (like the wheels); returns their directory and a digest of them."""
        out = self.root / "container-disk"
        out.mkdir(parents=True, exist_ok=True)
        programs = {
            "container-disk": (recipe.CONTAINER_DISK_COMMAND, recipe.CONTAINER_DISK_SOURCE),
            "virt-launcher-monitor": (recipe.MONITOR_FRONT_COMMAND, recipe.MONITOR_FRONT_SOURCE),
        }
        digest = hashlib.sha256()
        with self.timer.step("container-disk"):
            for name, (command, source) in programs.items():
                _run(["sh", "-ec", command.format(output=out / name, source=REPO / source)])
                digest.update(name.encode() + hashlib.sha256((out / name).read_bytes()).digest())
        return out, digest.hexdigest()

    def pause_layer(self) -> BuiltLayer:
        source = REPO / "hack" / "cluster" / "pause"
        key = _key("pause", *(path.read_text() for path in sorted(source.iterdir())))
        if cached := self._cached(key):
            return cached
        directory = self.layers / key
        _discard(directory)
        (directory / "fs.partial").mkdir(parents=True)
        with self.timer.step("pause"):
            env_script = REPO / "hack" / "cluster" / "go-env.sh"
            target = directory / "fs.partial" / "pause"
            build = f'source "{env_script}" && go build -trimpath -ldflags "-s -w" -o "{target}" .'
            _run(["bash", "-c", build], cwd=source)
            return self._finish(key, directory / "fs.partial", "pause")

    def test_guest_layers(self) -> dict[str, BuiltLayer]:
        """The test guests' images, each one layer on no base (like KubeVirt's containerDisk demos): each
        flavour's disk under ``/disk/``, and the plain guest's kernel and initramfs under ``/boot/`` for
        kernel boot."""
        guests = testguest.build_all(self.root.parent)
        guest = guests[testguest.TEST_GUEST.name]
        contents = {
            TEST_GUEST_DISK_IMAGE: (guest, {f"disk/{guest.flavour.disk_name}": guest.disk}),
            TEST_GUEST_KERNEL_IMAGE: (guest, {"boot/vmlinuz": guest.kernel, "boot/initrd.gz": guest.initrd}),
        }
        for name in COMPATIBLE_GUEST_IMAGES:
            compatible = guests[name]
            contents[name] = (compatible, {f"disk/{compatible.flavour.disk_name}": compatible.disk})
        built = {}
        for image, (source_guest, files) in contents.items():
            key = _key(image, source_guest.directory.name)
            if cached := self._cached(key):
                built[image] = cached
                continue
            directory = self.layers / key
            _discard(directory)
            fs = directory / "fs.partial"
            for target, source in files.items():
                (fs / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, fs / target)
                # KubeVirt's containerDisks hand their disk to the qemu user (107), read-only.
                os.chown(fs / target, QEMU_UID, QEMU_UID)
                os.chmod(fs / target, 0o440)
            for folder in {Path(target).parent for target in files}:
                os.chown(fs / folder, QEMU_UID, QEMU_UID)
                os.chmod(fs / folder, 0o555)
            built[image] = self._finish(key, fs, image)
        return built

    def image_server_layers(self) -> list[BuiltLayer]:
        """The test image server's own layers, to go on the ``base`` stage: the files
        :mod:`.imageserver.files` makes from the test guests' disks and containerDisks, then the server."""
        guests = testguest.build_all(self.root.parent)
        guest_layers = self.test_guest_layers()
        container_disks = {name: guest_layers[name].layer for name in COMPATIBLE_GUEST_IMAGES}
        recipe_text = Path(served_files.__file__).read_text()
        files_key = _key(
            imageserver.IMAGE,
            recipe_text,
            *(guest.directory.name for guest in guests.values()),
            *(layer.digest for layer in container_disks.values()),
        )
        server_key = _key(imageserver.IMAGE, imageserver.SERVER_SOURCE.read_text())
        files = self._cached(files_key)
        if files is None:
            fs = self._fresh_layer(files_key)
            root = fs / imageserver.ROOT.lstrip("/")
            root.mkdir(parents=True)
            with self.timer.step("test image server files"):
                disks = {name: guest.disk for name, guest in guests.items()}
                served_files.generate(disks, root, container_disks)
            _read_only(root)
            files = self._finish(files_key, fs, f"{imageserver.IMAGE}-files")
        server = self._cached(server_key)
        if server is None:
            fs = self._fresh_layer(server_key)
            program = fs / imageserver.SERVER_PATH.lstrip("/")
            program.parent.mkdir(parents=True)
            shutil.copyfile(imageserver.SERVER_SOURCE, program)
            _read_only(program.parent)
            server = self._finish(server_key, fs, imageserver.IMAGE)
        return [files, server]

    def image_server(self) -> BuiltImage:
        """The test image server's image: Debian's Python (the ``base`` stage) and its own layers, run as a
        user without privileges."""
        debian = self.debian()
        layers = [debian, self.run_stage("base", [debian], recipe.BASE_STEPS), *self.image_server_layers()]
        config = oci.ImageConfig(
            imageserver.ENTRYPOINT, imageserver.ARGS, list(recipe.ENV), user=recipe.NON_ROOT_IMAGE_USER
        )
        built = self.archive(image_name(imageserver.IMAGE), imageserver.IMAGE, layers, config)
        self._prune({layer.key for layer in layers})
        return built

    def _fresh_layer(self, key: str) -> Path:
        """The empty folder a new layer's files go in (what an interrupted build left is discarded)."""
        directory = self.layers / key
        _discard(directory)
        (directory / "fs.partial").mkdir(parents=True)
        return directory / "fs.partial"

    def archive(
        self, name: str, file_stem: str, layers: list[BuiltLayer], config: oci.ImageConfig
    ) -> BuiltImage:
        self.archives.mkdir(parents=True, exist_ok=True)
        target = self.archives / f"{file_stem}.tar"
        meta = self.archives / f"{file_stem}.json"
        identity = _key(name, *(layer.layer.digest for layer in layers), json.dumps(config.__dict__))
        if meta.exists() and target.exists():
            loaded = json.loads(meta.read_text())
            if loaded.get("identity") == identity:
                return BuiltImage(name, target, loaded["digest"], target.stat().st_size)
        with self.timer.step(f"archive {file_stem}"):
            digest = oci.write_archive(target, name, [layer.layer for layer in layers], config)
        meta.write_text(json.dumps({"identity": identity, "name": name, "digest": digest}))
        return BuiltImage(name, target, digest, target.stat().st_size)

    def build(self, binaries: list[str] | None = None) -> list[BuiltImage]:
        """Builds the images of ``binaries`` (default: all but the test image server's) and the pause image;
        one build at a time."""
        with locked(self.root / "lock"):
            return self._build(binaries)

    def _build(self, binaries: list[str] | None) -> list[BuiltImage]:
        pause = self.pause_layer()
        built = [self.archive(PAUSE_IMAGE, "pause", [pause], oci.ImageConfig(["/pause"], [], []))]
        wanted_guests = [name for name in TEST_GUEST_IMAGES if binaries is None or name in binaries]
        if wanted_guests:
            guest_layers = self.test_guest_layers()
            for name in wanted_guests:
                config = oci.ImageConfig(entrypoint=[], cmd=[], env=[])
                built.append(self.archive(image_name(name), name, [guest_layers[name]], config))
            self._prune({layer.key for layer in guest_layers.values()})
        # Built only when named: the test image server's files take time and space most runs do not need.
        if binaries is not None and imageserver.IMAGE in binaries:
            built.append(self.image_server())
        targets = [t for t in recipe.TARGETS if binaries is None or t.binary in binaries]
        if not targets:
            return built
        debian = self.debian()
        base = self.run_stage("base", [debian], recipe.BASE_STEPS)
        house, wheels_digest = self.wheels()
        binds = {recipe.WHEELS: house}
        deps = self.run_stage(
            "python-deps", [debian, base], recipe.PYTHON_STEPS[:1], binds=binds, inputs=_deps_inputs(house)
        )
        project = self.run_stage(
            "python-project", [debian, base, deps], recipe.PYTHON_STEPS[1:], binds=binds, inputs=wheels_digest
        )
        stages = {"python": [debian, base, deps, project]}
        if any(target.stage == "launcher" for target in targets):
            launcher = self.run_stage("launcher", [debian, base], recipe.LAUNCHER_STEPS)
            program, program_digest = self.container_disk()
            tools = self.run_stage(
                "container-disk",
                [debian, base, launcher],
                recipe.CONTAINER_DISK_INSTALL_STEPS,
                binds={recipe.CONTAINER_DISK_BUILD: program},
                inputs=program_digest,
            )
            # The venv layers only add /opt/kubevirt, so they stack on the launcher layers unchanged
            # (the Dockerfile's COPY --from=python); on the handler's and the importer's too.
            stages["launcher"] = [debian, base, launcher, tools, deps, project]
        if any(target.stage == "handler" for target in targets):
            handler = self.run_stage("handler", [debian, base], recipe.HANDLER_STEPS)
            stages["handler"] = [debian, base, handler, deps, project]
        if any(target.stage == "importer" for target in targets):
            importer = self.run_stage("importer", [debian, base], recipe.IMPORTER_STEPS)
            stages["importer"] = [debian, base, importer, deps, project]
        for target in targets:
            config = oci.ImageConfig(
                entrypoint=target.entrypoint, cmd=[], env=list(recipe.ENV), user=target.user
            )
            built.append(self.archive(image_name(target.binary), target.binary, stages[target.stage], config))
        self._prune({pause.key} | {layer.key for layers in stages.values() for layer in layers})
        return built

    def _prune(self, used: set[str]) -> None:
        """Drops layers superseded by this build: other versions of the stages it used (a stage it did
        not need, like the launcher's, keeps its layer)."""
        stages = set()
        for key in used:
            stages.add(json.loads((self.layers / key / "layer.json").read_text()).get("stage"))
        for meta in self.layers.glob("*/layer.json"):
            key = meta.parent.name
            if key not in used and json.loads(meta.read_text()).get("stage") in stages | {None}:
                _discard(meta.parent)


def _source_copy(target: Path) -> Path:
    """The repository's files as ``git`` sees them (tracked and new, not ignored) copied to ``target``, so
    a stale setuptools ``build/`` directory or other local leftovers never reach the project's wheel."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    for name in sorted(set(listing.stdout.decode().split("\0")) - {""}):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _discard(directory: Path) -> None:
    """Removes a layer directory left by an interrupted build, unmounting first: a stage's merged view
    has the host's /dev and /proc bound into it, which must never be deleted through."""
    if mounts_under(directory):
        unmount_all(directory)
        if mounts_under(directory):
            raise RuntimeError(f"{directory}: cannot unmount what an interrupted build left there")
    shutil.rmtree(directory, ignore_errors=True)


def _read_only(folder: Path) -> None:
    """Makes a folder and all in it readable by anyone, writable by no one."""
    for path in folder.rglob("*"):
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
    os.chmod(folder, 0o555)


def _deps_inputs(house: Path) -> str:
    project = recipe.PROJECT.replace("-", "_")
    return " ".join(sorted(wheel.name for wheel in house.glob("*.whl") if not wheel.name.startswith(project)))


def _ctr(layout: Layout, node: Node | None = None) -> list[str]:
    socket = (node or layout.node(1)).containerd_socket
    return ["ctr", f"--address={socket}", "--namespace=k8s.io"]


def present(layout: Layout, node: Node | None = None) -> dict[str, str]:
    """Image name -> manifest digest of what a node's containerd (default: node 1's) holds."""
    result = subprocess.run(
        [*_ctr(layout, node), "images", "ls"], capture_output=True, text=True, check=False
    )
    found = {}
    for line in result.stdout.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 3:
            found[fields[0]] = fields[2]
    return found


def running_nodes(layout: Layout) -> list[Node]:
    """Node 1 and every further node whose containerd answers: where images go."""
    further = [node for node in layout.extra_nodes() if node.containerd_socket.exists()]
    return [layout.node(1), *further]


def tag_all(layout: Layout, tag: str) -> list[str]:
    """Gives every project image the cluster holds a second tag (a stand-in for another release when
    an upgrade is tried), on every node; returns the new names."""
    tagged = []
    for node in running_nodes(layout):
        for name in present(layout, node):
            if name.startswith(f"{IMAGE_PREFIX}/") and name.endswith(f":{IMAGE_TAG}"):
                other = f"{name.rsplit(':', 1)[0]}:{tag}"
                _run([*_ctr(layout, node), "images", "tag", "--force", name, other])
                tagged.append(other)
    return sorted(set(tagged))


# KubeVirt's test suite boots its guests from these images (``<prefix>/<name>:<tag>``); the compatible
# test guests answer its scripted logins, so they stand in under those names.
SUITE_GUEST_IMAGES = {
    "cirros-container-disk-demo": "test-guest-cirros-compatible",
    "alpine-container-disk-demo": "test-guest-alpine-compatible",
    "alpine-with-test-tooling-container-disk": "test-guest-alpine-compatible",
    "fedora-with-test-tooling-container-disk": "test-guest-fedora-compatible",
}


def tag_suite_guests(layout: Layout) -> list[str]:
    """Gives the compatible test guests the names KubeVirt's functional tests pull, on every node;
    returns the names given."""
    named = []
    for node in running_nodes(layout):
        for suite_name, ours in SUITE_GUEST_IMAGES.items():
            source, target = (f"{IMAGE_PREFIX}/{name}:{IMAGE_TAG}" for name in (ours, suite_name))
            _run([*_ctr(layout, node), "images", "tag", "--force", source, target])
            named.append(target)
    return sorted(set(named))


def untag_all(layout: Layout, tag: str) -> None:
    """Removes the names ``tag_all`` gave (the content stays under the original names)."""
    for node in running_nodes(layout):
        held = present(layout, node)
        names = [n for n in held if n.startswith(f"{IMAGE_PREFIX}/") and n.endswith(f":{tag}")]
        if names:
            _run([*_ctr(layout, node), "images", "rm", *names])


def import_archives(
    layout: Layout, archives: list[tuple[str, Path, str]], node: Node | None = None
) -> list[str]:
    """Imports each (name, archive, digest) a node's containerd (default: node 1's) does not hold at that
    digest."""
    held = present(layout, node)
    imported = []
    for name, archive, digest in archives:
        if held.get(name) == digest:
            continue
        _import(layout, node, archive)
        imported.append(name)
    return imported


def _import(layout: Layout, node: Node | None, archive: Path) -> None:
    try:
        _run([*_ctr(layout, node), "images", "import", str(archive)])
    except RuntimeError as err:
        if "failed to prepare extraction snapshot" not in str(err):
            raise
        # containerd's unpacker can find a shared layer's parent snapshot missing (seen after images sharing
        # their base were rebuilt) and fails the same way on every try; the image is then recorded without
        # unpacking, and the kubelet's runtime unpacks it when a container first uses it.
        _run([*_ctr(layout, node), "images", "import", "--no-unpack", str(archive)])


def import_everywhere(layout: Layout, built: list[BuiltImage]) -> dict[str, list[str]]:
    """Imports built images into every running node's containerd; returns what each node (by name) took."""
    archives = [(image.name, image.archive, image.digest) for image in built]
    return {node.name: import_archives(layout, archives, node) for node in running_nodes(layout)}


def import_cached(layout: Layout, node: Node | None = None) -> list[str]:
    """Imports every archive hack/build-images left in the cache (the pause image is built if missing)."""
    builder = Builder(layout, log=False)
    if not (builder.archives / "pause.json").exists():
        builder.build(binaries=[])
    archives = []
    for meta in sorted(builder.archives.glob("*.json")):
        loaded = json.loads(meta.read_text())
        archives.append((loaded["name"], meta.with_suffix(".tar"), loaded["digest"]))
    return import_archives(layout, archives, node)
