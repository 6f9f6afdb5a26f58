"""The source end of CDI's host-assisted clone."""
