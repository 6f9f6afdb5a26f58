"""The ``pool.kubevirt.io`` API group."""
