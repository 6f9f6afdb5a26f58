"""KubeVirt's seccomp profile for virt-launcher pods, and virt-handler's installing it on its node
(KubeVirt's ``pkg/virt-handler/seccomp``)."""

from .install import LOCALHOST_PROFILE, ProfileInstaller, install_profile, profile_bytes, profile_path
from .kubevirt_profile import kubevirt_profile

__all__ = [
    "LOCALHOST_PROFILE",
    "ProfileInstaller",
    "install_profile",
    "kubevirt_profile",
    "profile_bytes",
    "profile_path",
]
