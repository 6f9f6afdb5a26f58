"""The ``kubevirt.io`` API group."""
