"""CDI (containerized-data-importer) types that KubeVirt objects embed."""
