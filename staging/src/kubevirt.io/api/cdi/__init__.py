"""CDI (containerized-data-importer) ``cdi.kubevirt.io`` types, wire names and CRDs."""
