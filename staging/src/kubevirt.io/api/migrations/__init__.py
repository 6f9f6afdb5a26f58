"""The ``migrations.kubevirt.io`` API group: cluster-wide migration policies."""
