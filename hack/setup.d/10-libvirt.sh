#!/usr/bin/env bash
# libvirt and QEMU (software emulation) for the converter, virt-launcher and their tests.
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

apt_install libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils

# Without Debian's libvirt-daemon-system the QEMU driver refuses to start ("Failed to parse user
# 'libvirt-qemu'"): create the groups and the system user its install script would have made.
getent group kvm >/dev/null || groupadd --system kvm
getent group libvirt-qemu >/dev/null || groupadd --system --gid 64055 libvirt-qemu
getent passwd libvirt-qemu >/dev/null ||
    useradd --system --uid 64055 --gid libvirt-qemu --groups kvm --home-dir /var/lib/libvirt \
        --no-create-home --shell /usr/sbin/nologin libvirt-qemu
