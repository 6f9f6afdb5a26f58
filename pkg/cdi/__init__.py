"""What the project's DataVolume importer shares between its controller and its worker pods."""
