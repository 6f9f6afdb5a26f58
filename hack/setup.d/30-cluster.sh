#!/usr/bin/env bash
# What hack/cluster-up and hack/build-images run on: etcd, containerd + runc, the CNI plugins, iptables
# (the kubelet and the bridge plugin use it), debootstrap for the image root filesystems, and Go to build
# the Kubernetes components from their modules.
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

apt_install etcd-server containerd runc containernetworking-plugins iptables conntrack debootstrap \
    ethtool socat util-linux mount kmod dosfstools mtools syslinux
command -v go >/dev/null || apt_install golang-go
