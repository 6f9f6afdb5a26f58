"""virt-api: kubeVirt's aggregated API server: admission webhooks and subresources.kubevirt.io."""
