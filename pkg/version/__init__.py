"""The project version, as every binary reports it."""

import platform
import sys

DISTRIBUTION = "kubevirt-py"


def get_version() -> str:
    """The installed distribution's version (``0.0.0-dev`` when running from an uninstalled tree)."""
    from importlib import metadata  # only here: importing it costs every binary's start-up

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0.0.0-dev"


def version_info() -> dict[str, str]:
    """The build in the shape of KubeVirt's ``version.Info`` (what ``/version`` serves)."""
    return {
        "gitVersion": f"v{get_version()}",
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": f"python{platform.python_version()}",
        "compiler": sys.implementation.name,
        "platform": f"{sys.platform}/{platform.machine()}",
    }


def format_version_info(info: dict[str, str]) -> str:
    """``version.Info`` as Go's ``%#v`` prints it, which is how virtctl shows both versions."""
    fields = ", ".join(f'{key[0].upper()}{key[1:]}:"{value}"' for key, value in info.items())
    return f"version.Info{{{fields}}}"
