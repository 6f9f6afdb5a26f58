"""virt-launcher: runs in each VMI's pod and owns the libvirt domain there."""
