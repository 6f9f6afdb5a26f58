"""The objects virt-operator installs, as plain Kubernetes JSON (KubeVirt's ``resource/generate``)."""
