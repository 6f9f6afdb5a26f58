"""KubeVirt in Python: the shared libraries and the components (importable as ``kubevirt``)."""
