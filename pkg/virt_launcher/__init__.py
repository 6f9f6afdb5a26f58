"""virt-launcher: runs in each VMI's pod and owns the libvirt domain there."""

# Bound on every logger explicitly: gRPC handler threads do not inherit the main thread's log context.
COMPONENT = "virt-launcher"
