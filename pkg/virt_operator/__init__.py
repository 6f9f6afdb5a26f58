"""virt-operator: installs and upgrades KubeVirt from a KubeVirt custom resource."""
