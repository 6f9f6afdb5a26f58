"""The ``export.kubevirt.io`` API group: exporting a VM's volumes over HTTP."""
