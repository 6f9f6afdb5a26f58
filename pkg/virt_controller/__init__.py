"""virt-controller: reconciles VMs, VMIs, virt-launcher pods, migrations, replica sets and pools."""
