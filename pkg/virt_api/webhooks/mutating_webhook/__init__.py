"""virt-api's mutating webhooks (KubeVirt's ``pkg/virt-api/webhooks/mutating-webhook``)."""
