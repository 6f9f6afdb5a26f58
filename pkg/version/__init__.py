"""The project version, as every binary reports it."""

from importlib import metadata

DISTRIBUTION = "kubevirt-py"


def get_version() -> str:
    """The installed distribution's version (``0.0.0-dev`` when running from an uninstalled tree)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0.0.0-dev"
