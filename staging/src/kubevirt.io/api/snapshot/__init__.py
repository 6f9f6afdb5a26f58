"""The ``snapshot.kubevirt.io`` API group: VM snapshots, their contents and restores."""
