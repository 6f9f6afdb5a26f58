"""virt-controller's snapshot and restore controllers (KubeVirt keeps them in ``pkg/storage/snapshot``).

* :mod:`.snapshot` drives a VirtualMachineSnapshot: it locks the VM, writes the
  VirtualMachineSnapshotContent and reports the snapshot's phase, conditions and indications.
* :mod:`.content` takes one VolumeSnapshot per claim a content lists and reports when they are ready.
* :mod:`.vmstatus` keeps each VM's ``status.volumeSnapshotStatuses`` (which volumes can be snapshotted).
* :mod:`.restore` drives a VirtualMachineRestore: claims made from the VolumeSnapshots, then the VM's spec.
  :mod:`.restore_spec` builds what it writes; :mod:`.restore_status` holds what it reports.

All of them work on plain JSON objects: the snapshot kinds are read from informers as dicts, as the
Kubernetes storage kinds are.
"""
