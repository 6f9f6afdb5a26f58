"""virt-controller's VirtualMachineClone controller (``clone.kubevirt.io``).

* :mod:`.clone` drives a clone through a VirtualMachineSnapshot and a VirtualMachineRestore to a new VM,
  and reports its phase, conditions and events;
* :mod:`.spec` builds what it writes (the snapshot, the restore and the restore's patches) and checks the
  source VM and the snapshot content.

Clones, snapshots, contents and restores are read from informers as plain JSON objects.
"""
