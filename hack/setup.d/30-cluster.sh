#!/usr/bin/env bash
# What hack/cluster-up and hack/build-images run on: etcd, containerd + runc, the CNI plugins, iptables
# (the kubelet and the bridge plugin use it), debootstrap for the image root filesystems, and Go to build
# the Kubernetes components from their modules; gcc for the static container-disk program; dosfstools, mtools
# and syslinux for the test guests' bootable disks, e2fsprogs for the Fedora-compatible one's data partition.
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

apt_install etcd-server containerd runc containernetworking-plugins iptables conntrack debootstrap \
    ethtool socat util-linux mount kmod gcc libc6-dev dosfstools mtools syslinux e2fsprogs
command -v go >/dev/null || apt_install golang-go
