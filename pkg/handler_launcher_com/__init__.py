"""The two gRPC protocols between virt-handler and virt-launcher (``kubevirt.cmd.v1``, ``kubevirt.notify.v1``)
and the thin glue around them: socket paths, version negotiation, unix-socket servers and clients."""
