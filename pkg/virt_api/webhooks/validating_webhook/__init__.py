"""virt-api's validating webhooks (KubeVirt's ``pkg/virt-api/webhooks/validating-webhook``)."""
