"""KubeVirt's Prometheus metrics, by component."""
