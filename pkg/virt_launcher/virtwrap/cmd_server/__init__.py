"""virt-launcher's gRPC command server (``kubevirt.cmd.v1.Cmd``)."""
