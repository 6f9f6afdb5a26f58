"""virt-handler's node labeller: what this node's libvirt can run, as labels on its own Node.

The capabilities are read from the XML files a privileged helper writes before virt-handler starts
(:mod:`kubevirt.virt_handler.node_labeller.discovery`, KubeVirt's ``node-labeller.sh``); the labels are a
pure function of them and the cluster configuration (:mod:`.labels`); :class:`.labeller.NodeLabeller`
keeps the Node's labeller-owned labels equal to that function's answer.
"""
