"""Shared pieces of VM export: what the export controller tells the export server to serve, and the
export token."""
