"""KubeVirt's seccomp profile for virt-launcher pods: containers/common's default, with ``userfaultfd``
allowed, which post-copy migration needs (the default refuses it with EPERM)."""

from __future__ import annotations

from dataclasses import replace

from .default_profile import default_profile
from .model import ACT_ALLOW, ACT_ERRNO, Profile, Rule

USERFAULTFD = "userfaultfd"


def allow_syscall(profile: Profile, name: str) -> Profile:
    """``profile`` with ``name`` taken out of the first rule that refuses it with an error, and allowed by
    a rule of its own at the end."""
    rules = list(profile.rules)
    for i, rule in enumerate(rules):
        if name in rule.names and rule.action == ACT_ERRNO:
            rules[i] = rule.without(name)
            break
    rules.append(Rule((name,), ACT_ALLOW))
    return replace(profile, rules=tuple(rules))


def kubevirt_profile() -> Profile:
    return allow_syscall(default_profile(), USERFAULTFD)
