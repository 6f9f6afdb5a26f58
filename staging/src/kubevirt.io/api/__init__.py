"""KubeVirt's API types (``kubevirt.io/api``), importable on their own as ``kubevirt_api``."""
