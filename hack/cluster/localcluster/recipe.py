"""The image recipe: one description that both ``Dockerfile.build`` (for container engines) and
``hack/build-images`` (debootstrap + overlayfs, no engine) are made from, so the two cannot drift.

Stages run shell commands in order. ``base`` starts from Debian bookworm; ``python`` installs the project's
wheels (built by the ``wheels`` stage) into ``/opt/kubevirt``; ``launcher`` adds libvirt and QEMU and takes
``/opt/kubevirt`` from ``python``; ``handler`` adds virt-handler's few tools the same way, ``importer``
the DataVolume importer's ``qemu-img``. Every binary's image is one of those plus its entrypoint.
"""

from __future__ import annotations

from dataclasses import dataclass

DEBIAN_SUITE = "bookworm"
DEBIAN_IMAGE = f"debian:{DEBIAN_SUITE}-slim"
VENV = "/opt/kubevirt"
WHEELS = "/wheels"
PROJECT = "kubevirt-py"

_APT = "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends"
_APT_CLEAN = "apt-get clean && rm -rf /var/lib/apt/lists/*"

# libnftables1: virt-handler writes the masquerade binding's NAT rules through it.
BASE_PACKAGES = ("python3", "python3-venv", "libvirt0", "ca-certificates", "libnftables1")
WHEEL_BUILD_PACKAGES = ("gcc", "pkg-config", "libvirt-dev", "python3-dev")
LAUNCHER_PACKAGES = (
    "libvirt-daemon",
    "libvirt-daemon-driver-qemu",
    "libvirt-clients",
    "qemu-system-x86",
    "qemu-utils",
    "libcap2-bin",  # setcap, for virt-launcher-monitor's file capability
    # ps, pgrep (procps), ip and bridge (iproute2): KubeVirt's functional tests run them in a failed spec's
    # compute containers, and KubeVirt's image has them.
    "procps",
    "iproute2",
    # A static busybox, for filling a PVC from a containerDisk image: copied into the image's container,
    # which holds nothing else that runs (examples/pvc-root-disk-import.yaml).
    "busybox-static",
)
# pgrep and ps: KubeVirt's functional tests run pgrep in virt-handler's pods, and KubeVirt's image has it.
HANDLER_PACKAGES = ("procps",)
# qemu-img: the DataVolume importer converts, resizes and inspects the images it writes with it. A static
# busybox: a registry node pull copies it into the image's container to serve the disk.
IMPORTER_PACKAGES = ("qemu-utils", "busybox-static")

# Every file of an image carries the same mtime (the layers are reproducible), so a .pyc that records its
# source's mtime never matches: Python would compile each module again at every start of every container,
# the launcher's included, under its pod's CPU limit. Bytecode validated by the source's hash stays valid.
_HASHED_PYC = "SOURCE_DATE_EPOCH=315532800"  # py_compile's default then is the checked-hash mode
_COMPILE_STDLIB = (
    "python3 -m compileall -q -f --invalidation-mode checked-hash "
    '"$(python3 -c \'import sysconfig; print(sysconfig.get_path("stdlib"))\')"'
)
BASE_STEPS = (
    # Like the official images: no service starts while packages install.
    "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d",
    f"{_APT} {' '.join(BASE_PACKAGES)} && {_APT_CLEAN}",
    _COMPILE_STDLIB,
)
WHEEL_BUILD_STEPS = (f"{_APT} {' '.join(WHEEL_BUILD_PACKAGES)}",)
# Run in the source tree: wheels of the project and of every dependency land in the wheel directory.
# SOURCE_DATE_EPOCH makes the project's wheel (and so its image layer) depend only on the sources.
WHEEL_COMMAND = (
    "(test -x {builder}/bin/pip || python3 -m venv {builder}) && "
    "SOURCE_DATE_EPOCH=315532800 {builder}/bin/pip wheel {options}--wheel-dir {wheels} ."
)
WHEEL_BUILDER_VENV = "/tmp/wheel-builder"
# Dependencies first (they change rarely), the project itself in a layer of its own.
PYTHON_STEPS = (
    # The venv's own pip and setuptools too: setuptools' .pth file imports a module at every start.
    f"export {_HASHED_PYC} && python3 -m venv {VENV} && {VENV}/bin/pip install --no-cache-dir --no-index "
    f"--find-links {WHEELS} $(ls {WHEELS}/*.whl | grep -v '/{PROJECT.replace('-', '_')}-')",
    f"{_HASHED_PYC} {VENV}/bin/pip install --no-cache-dir --no-index --no-deps "
    f"{WHEELS}/{PROJECT.replace('-', '_')}-*.whl",
)
# The programs KubeVirt's launcher pod template calls by absolute path.
LAUNCHER_POD_TOOLS = ("virt-launcher-monitor", "virt-launcher", "virt-tail")
# container-disk runs inside containerDisk images, which may hold nothing but their disk: a static C
# executable, built in a stage of its own and installed into the launcher image.
CONTAINER_DISK_SOURCE = "cmd/container-disk/container-disk.c"
CONTAINER_DISK_BUILD = "/container-disk-build"
CONTAINER_DISK_BUILD_PACKAGES = ("gcc", "libc6-dev")
CONTAINER_DISK_COMMAND = "gcc -static -Os -s -Wall -Wextra -Werror -o {output} {source}"
# The launcher image's /usr/bin/virt-launcher-monitor: a static front carrying NET_BIND_SERVICE as a file
# capability into a non-root compute container, then exec'ing the venv's monitor (see its source).
MONITOR_FRONT_SOURCE = "cmd/virt-launcher-monitor/capability-front.c"
MONITOR_FRONT_COMMAND = (
    f"gcc -static -Os -s -Wall -Wextra -Werror '-DMONITOR=\"{VENV}/bin/virt-launcher-monitor\"' "
    "-o {output} {source}"
)
QEMU_UID = "107"
_QEMU_USER = (
    f"groupadd --gid {QEMU_UID} qemu && "
    f"useradd --uid {QEMU_UID} --gid {QEMU_UID} --home-dir /home/qemu --no-create-home --shell /bin/bash qemu"
)
LAUNCHER_STEPS = (
    f"{_APT} {' '.join(LAUNCHER_PACKAGES)} && {_APT_CLEAN}",
    # libvirt's QEMU driver needs the users Debian's libvirt-daemon-system would create.
    "(getent group kvm || groupadd --system kvm) && "
    "(getent group libvirt-qemu || groupadd --system --gid 64055 libvirt-qemu) && "
    "(getent passwd libvirt-qemu || useradd --system --uid 64055 --gid libvirt-qemu --groups kvm "
    "--home-dir /var/lib/libvirt --no-create-home --shell /usr/sbin/nologin libvirt-qemu)",
    # The user KubeVirt's non-root launcher pods run as, named as in KubeVirt's image: libvirtd in session
    # mode refuses a client whose uid has no passwd entry, the launcher's own connection included.
    _QEMU_USER,
    # KubeVirt's launcher pod runs these from /usr/bin; they are the venv's console scripts (added later).
    " && ".join(
        f"ln -sf {VENV}/bin/{tool} /usr/bin/{tool}"
        for tool in LAUNCHER_POD_TOOLS
        if tool != "virt-launcher-monitor"
    ),
    # Guests are x86_64 only (KubeVirt's image has that one emulator too). libvirt probes every QEMU it
    # finds on the first define in each pod, under the pod's CPU limit: the 32-bit one would double that.
    "rm -f /usr/bin/qemu-system-i386",
)
# virt-handler's image: these tools on ``base``, then ``/opt/kubevirt`` from ``python`` (as the launcher's).
HANDLER_STEPS = (f"{_APT} {' '.join(HANDLER_PACKAGES)} && {_APT_CLEAN}",)
# The DataVolume importer's image, the same way. Its pods run as the qemu user, as CDI's (whose image gets
# that user from its qemu-img package).
IMPORTER_STEPS = (f"{_APT} {' '.join(IMPORTER_PACKAGES)} && {_APT_CLEAN}", _QEMU_USER)
# A layer of its own, so that a change to the program does not reinstall libvirt and QEMU.
CONTAINER_DISK_INSTALL_STEPS = (
    f"install -m 0755 {CONTAINER_DISK_BUILD}/container-disk /usr/bin/container-disk",
    f"install -m 0755 {CONTAINER_DISK_BUILD}/virt-launcher-monitor /usr/bin/virt-launcher-monitor && "
    "setcap cap_net_bind_service=ep /usr/bin/virt-launcher-monitor",
)
ENV = (f"PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)


NON_ROOT_IMAGE_USER = "1001"


@dataclass(frozen=True)
class Target:
    binary: str
    stage: str  # "python", "launcher", "handler" or "importer"
    # The image's user. The exporter's pods say only runAsNonRoot (KubeVirt's images declare USER 1001);
    # the other components' pods name their user themselves.
    user: str = ""

    @property
    def entrypoint(self) -> list[str]:
        return [f"{VENV}/bin/{self.binary}"]


TARGETS = (
    Target("virt-operator", "python"),
    Target("virt-api", "python"),
    Target("virt-controller", "python"),
    # The export proxy, and the server virt-controller runs in each export's pod.
    Target("virt-exportproxy", "python", user=NON_ROOT_IMAGE_USER),
    Target("virt-exportserver", "python", user=NON_ROOT_IMAGE_USER),
    Target("virt-handler", "handler"),
    Target("virt-launcher", "launcher"),
    Target("virtctl", "python"),
    # The DataVolume importer virt-operator installs under the DataImporter gate: its controller
    # (USER 1001 as CDI's image) and the worker of its importer-<claim> pods.
    Target("cdi-controller", "python", user=NON_ROOT_IMAGE_USER),
    Target("cdi-importer", "importer", user=QEMU_UID),
    # Uploads: the token API, the proxy virtctl posts to, and the server of each cdi-upload-<claim> pod
    # (the importer's stage: it converts with qemu-img and writes as the qemu user, like the importer).
    Target("cdi-apiserver", "python", user=NON_ROOT_IMAGE_USER),
    Target("cdi-uploadproxy", "python", user=NON_ROOT_IMAGE_USER),
    Target("cdi-uploadserver", "importer", user=QEMU_UID),
    # Host-assisted clones: the source pod streaming a claim to a clone-mode upload server.
    Target("cdi-cloner", "importer", user=QEMU_UID),
)


def dockerfile() -> str:
    """``Dockerfile.build``: the same stages and commands for engines with BuildKit."""
    out = [
        "# syntax=docker/dockerfile:1",
        "# Generated from hack/cluster/localcluster/recipe.py by hack/generate; do not edit.",
        "# One target per binary: docker build -f Dockerfile.build --target virt-api .",
        "",
        f"FROM {DEBIAN_IMAGE} AS base",
        *(f"RUN {step}" for step in BASE_STEPS),
        f"ENV {ENV[0]}",
        "",
        "FROM base AS wheels",
        *(f"RUN {step}" for step in WHEEL_BUILD_STEPS),
        "COPY . /src",
        "WORKDIR /src",
        f"RUN {WHEEL_COMMAND.format(builder=WHEEL_BUILDER_VENV, wheels=WHEELS, options='')}",
        "",
        "FROM base AS python",
        *(
            f"RUN --mount=type=bind,from=wheels,source={WHEELS},target={WHEELS} {step}"
            for step in PYTHON_STEPS
        ),
        "",
        "FROM base AS container-disk-build",
        f"RUN {_APT} {' '.join(CONTAINER_DISK_BUILD_PACKAGES)}",
        f"COPY {CONTAINER_DISK_SOURCE} /src/container-disk.c",
        f"COPY {MONITOR_FRONT_SOURCE} /src/capability-front.c",
        f"RUN mkdir {CONTAINER_DISK_BUILD} && "
        + CONTAINER_DISK_COMMAND.format(
            output=f"{CONTAINER_DISK_BUILD}/container-disk", source="/src/container-disk.c"
        )
        + " && "
        + MONITOR_FRONT_COMMAND.format(
            output=f"{CONTAINER_DISK_BUILD}/virt-launcher-monitor", source="/src/capability-front.c"
        ),
        "",
        "FROM base AS launcher",
        *(f"RUN {step}" for step in LAUNCHER_STEPS),
        *(
            f"RUN --mount=type=bind,from=container-disk-build,source={CONTAINER_DISK_BUILD},"
            f"target={CONTAINER_DISK_BUILD} {step}"
            for step in CONTAINER_DISK_INSTALL_STEPS
        ),
        f"COPY --from=python {VENV} {VENV}",
        "",
        "FROM base AS handler",
        *(f"RUN {step}" for step in HANDLER_STEPS),
        f"COPY --from=python {VENV} {VENV}",
        "",
        "FROM base AS importer",
        *(f"RUN {step}" for step in IMPORTER_STEPS),
        f"COPY --from=python {VENV} {VENV}",
    ]
    for target in TARGETS:
        entrypoint = ", ".join(f'"{part}"' for part in target.entrypoint)
        out += ["", f"FROM {target.stage} AS {target.binary}"]
        out += [f"USER {target.user}"] if target.user else []
        out += [f"ENTRYPOINT [{entrypoint}]"]
    return "\n".join(out) + "\n"
