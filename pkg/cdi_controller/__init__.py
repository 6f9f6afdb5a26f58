"""The project's DataVolume importer controllers, wire-compatible with CDI v1.63's cdi-controller on its
annotation-driven path (no volume populators): the DataVolume controller renders and creates each claim,
the import controller runs an importer pod per claim, and the CDIConfig and StorageProfile controllers
publish what both read (filesystem overhead, claim properties per storage class)."""
