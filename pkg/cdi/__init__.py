"""What the project's DataVolume importer shares between its components and its worker pods (names,
sizes, tokens), and the clone authorization both cdi-apiserver and virt-controller decide with."""
