"""The ``clone.kubevirt.io`` API group: cloning a VM (through a snapshot and a restore)."""
