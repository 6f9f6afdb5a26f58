#!/usr/bin/env bash
# VM networking: libnftables (the masquerade binding's NAT rules) and busybox (its udhcpc is the DHCP
# client of the network tests).
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

apt_install libnftables1 busybox-static
