"""virt-handler: the node agent: drives each VMI on this node through its virt-launcher."""
