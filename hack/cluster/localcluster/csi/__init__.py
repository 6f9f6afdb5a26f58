"""A small hostpath CSI driver for the local cluster (development infrastructure, not part of KubeVirt).

Volumes are node-local: each node has a data directory, and a volume lives on the node the scheduler picked
for its first consumer (a WaitForFirstConsumer StorageClass; every volume carries the node as its
accessible topology). A volume asked for with a multi-node access mode (a ReadWriteMany or ReadOnlyMany
claim) is the exception: it lives in a shared data directory that every node sees (the nodes share the
host's filesystem) and is accessible from every node, so a VM on it can live-migrate. ``volumeMode:
Filesystem`` volumes are plain directories, bind-mounted into the pod;
``Block`` volumes are sparse files, attached to a loop device whose device node is bind-mounted at the
kubelet's publish path. Snapshots are copies of a volume's directory or file; clones and restores copy
them back. Expansion grows the recorded size of a directory (no hard quota) or the file under a loop
device, which the node then re-reads (``losetup -c``).

Directories rather than ext4 images for Filesystem volumes: that is what KubeVirt's own hostpath CI storage
does, it needs no mkfs/fsck/resize2fs or a loop device per filesystem volume, the kubelet can apply a pod's
fsGroup to the files (CSIDriver ``fsGroupPolicy: File``), and KubeVirt itself sizes the ``disk.img`` it
creates on a Filesystem PVC from the PVC's capacity, which is what the driver reports.

The modules: :mod:`.store` keeps the volumes and snapshots on disk and is what the controller service
works on, :mod:`.node` publishes them into pods, :mod:`.driver` serves the CSI Identity, Controller and
Node services, :mod:`.registration` registers the node plugin with the kubelet (what the CSI project's
node-driver-registrar does), and :mod:`.deploy` runs it all on the local cluster.
"""
