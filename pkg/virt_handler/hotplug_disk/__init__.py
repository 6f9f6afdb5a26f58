"""virt-handler's hotplugged volumes (KubeVirt's ``pkg/virt-handler/hotplug-disk``): each claim the hotplug
attachment pod holds is put into the virt-launcher pod's ``hotplug-disks`` volume, where the launcher
attaches it to the running domain. See :mod:`.mounter` for the steps and :mod:`.hostops` for the node's side.
"""
