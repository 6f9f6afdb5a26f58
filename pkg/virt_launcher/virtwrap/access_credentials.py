"""Access credentials propagated through the guest agent (``spec.accessCredentials`` with
``propagationMethod.qemuGuestAgent``), as KubeVirt's launcher propagates them.

Each credential's Secret is mounted in the launcher pod under ``<secret>-access-cred``. A worker looks at
those folders every 15 s and, when their contents changed (a Secret edited in the cluster reaches the pod
by the kubelet's atomic swap), every 5 minutes regardless, or until an attempt succeeds: it pings the
agent, sets each user's authorized keys (all the keys of all the Secrets naming the user, replacing the
file) and each password (a file per user in a password Secret). The outcome is written into the domain's
KubeVirt metadata (``accessCredential``: succeeded, message), which virt-handler turns into the VMI's
``AccessCredentialsSynchronized`` condition.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import libvirt
import libvirt_qemu

from kubevirt import pod_paths
from kubevirt.log import get_logger
from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.agent import AgentError
from kubevirt.virt_launcher.virtwrap.agent.caller import COMMAND_TIMEOUT, WAIT_MARGIN, AgentCaller

CHECK_INTERVAL_SECONDS = 15.0
FORCED_RESYNC_SECONDS = 300.0
AGENT_OFFLINE = "Guest agent is offline"
SECRET_DIR_SUFFIX = "-access-cred"
# A mounted secret file bigger than this is not a key list or a password.
MAX_SECRET_FILE_BYTES = 1 << 20


class CredentialAgent(Protocol):
    """What propagation needs of the guest agent (through libvirt)."""

    def ping(self) -> None: ...
    def set_authorized_keys(self, user: str, keys: list[str]) -> None: ...
    def set_user_password(self, user: str, password: str) -> None: ...


class LibvirtCredentialAgent:
    """The agent of the launcher's domain, through libvirt's agent APIs, each call bounded in time by the
    launcher's agent caller. Failures read as KubeVirt's (the Go binding's ``virError(...)`` text)."""

    def __init__(self, domain: Callable[[], libvirt.virDomain | None], caller: AgentCaller) -> None:
        self._domain = domain
        self._caller = caller

    def ping(self) -> None:
        ping = '{"execute":"guest-ping"}'
        self._call(
            "pinging the guest agent",
            lambda dom: libvirt_qemu.qemuAgentCommand(dom, ping, COMMAND_TIMEOUT, 0),
        )

    def set_authorized_keys(self, user: str, keys: list[str]) -> None:
        # Flags 0: the user's authorized_keys file is replaced by these keys.
        self._call("setting authorized keys", lambda dom: dom.authorizedSSHKeysSet(user, keys, 0))

    def set_user_password(self, user: str, password: str) -> None:
        self._call("setting a password", lambda dom: dom.setUserPassword(user, password, 0))

    def _call(self, what: str, action: Callable[[libvirt.virDomain], object]) -> None:
        dom = self._domain()
        if dom is None:
            raise AgentError(f"{what}: the domain does not exist")
        try:
            self._caller.run(what, lambda: action(dom), wait=COMMAND_TIMEOUT + WAIT_MARGIN, key="credentials")
        except AgentError as err:
            raise AgentError(err.go_message) from None


@dataclass(frozen=True)
class Outcome:
    succeeded: bool
    message: str = ""


def _agent_propagated(credential: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, secret name) of a credential the agent propagates; kind is "ssh" or "password"."""
    for key, kind in (("sshPublicKey", "ssh"), ("userPassword", "password")):
        entry = credential.get(key)
        if not isinstance(entry, dict):
            continue
        if (entry.get("propagationMethod") or {}).get("qemuGuestAgent") is None:
            return None  # KubeVirt looks no further than the first kind the credential has
        secret = ((entry.get("source") or {}).get("secret") or {}).get("secretName")
        return (kind, secret) if secret else None
    return None


def secret_dir(secret_name: str, base: Path) -> Path:
    return base / f"{secret_name}{SECRET_DIR_SUFFIX}"


def _secret_files(folder: Path) -> list[Path]:
    """The Secret's keys as files: the kubelet's ``..data`` swap folders and links are skipped."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as err:
        raise CredentialReadError(
            f"error occurred while reading the list of secrets files from the base directory {folder}: {err}"
        ) from None
    return [entry for entry in entries if not entry.name.startswith("..") and not entry.is_dir()]


def _read(path: Path) -> str:
    try:
        with path.open("rb") as source:
            data = source.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as err:
        raise CredentialReadError(
            f"error occurred while reading the access credential secret file [{path}]: {err}"
        ) from None
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise CredentialReadError(f"the access credential secret file [{path}] is larger than 1 MiB")
    return data.decode("utf-8", errors="replace")


class CredentialReadError(Exception):
    """A mounted Secret could not be read."""


@dataclass
class Credentials:
    """What the Secrets ask for: keys per user (in the order of the credentials), passwords per user."""

    keys: dict[str, list[str]] = field(default_factory=dict)
    passwords: dict[str, str] = field(default_factory=dict)


def read_credentials(credentials: Iterable[Mapping[str, Any]], base: Path) -> tuple[Credentials, list[str]]:
    """The credentials the mounted Secrets hold, and the errors of those that could not be read."""
    out = Credentials()
    errors: list[str] = []
    for credential in credentials:
        propagated = _agent_propagated(credential)
        if propagated is None:
            continue
        kind, secret = propagated
        try:
            files = _secret_files(secret_dir(secret, base))
            if kind == "ssh":
                users = (
                    (credential["sshPublicKey"].get("propagationMethod") or {}).get("qemuGuestAgent") or {}
                ).get("users") or []
                keys = [line.strip() for path in files for line in _read(path).split("\n") if line.strip()]
                for user in users:
                    out.keys.setdefault(str(user), []).extend(keys)
            else:
                for path in files:
                    if password := _read(path).strip():
                        out.passwords[path.name] = password
        except CredentialReadError as err:
            errors.append(str(err))
    return out, errors


def secrets_digest(credentials: Iterable[Mapping[str, Any]], base: Path) -> str:
    """Changes whenever a mounted credential Secret's contents change."""
    digest = hashlib.sha256()
    for credential in credentials:
        propagated = _agent_propagated(credential)
        if propagated is None:
            continue
        folder = secret_dir(propagated[1], base)
        digest.update(str(folder).encode())
        try:
            for path in _secret_files(folder):
                digest.update(path.name.encode() + b"\0" + _read(path).encode() + b"\0")
        except CredentialReadError as err:
            digest.update(str(err).encode())
    return digest.hexdigest()


def propagate(agent: CredentialAgent, credentials: Iterable[Mapping[str, Any]], base: Path) -> Outcome:
    """One propagation, as KubeVirt's: the last error is what is reported."""
    try:
        agent.ping()
    except AgentError:
        return Outcome(False, AGENT_OFFLINE)
    wanted, errors = read_credentials(credentials, base)
    message = errors[-1] if errors else ""
    for user, keys in wanted.keys.items():
        try:
            agent.set_authorized_keys(user, keys)
        except AgentError as err:
            message = f"Error encountered writing ssh pub key access credentials for user [{user}]: {err}"
    for user, password in wanted.passwords.items():
        try:
            agent.set_user_password(user, password)
        except AgentError as err:
            message = f"Error encountered setting password for user [{user}]: {err}"
    return Outcome(not message and not errors, message)


class AccessCredentialWorker:
    """Keeps the guest's credentials in step with the mounted Secrets while the domain runs."""

    def __init__(
        self,
        agent: CredentialAgent,
        report: Callable[[Outcome], None],
        *,
        base: Path = Path(pod_paths.SECRET_SOURCE_DIR),
        interval: float = CHECK_INTERVAL_SECONDS,
        forced_resync: float = FORCED_RESYNC_SECONDS,
    ) -> None:
        self._agent = agent
        self._report = report
        self._base = base
        self._interval = interval
        self._forced_resync = forced_resync
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._last: Outcome | None = None

    def start(self, credentials: list[Mapping[str, Any]]) -> None:
        """Starts once (later calls do nothing); a VMI without agent-propagated credentials starts nothing."""
        with self._lock:
            if self._thread is not None or not any(_agent_propagated(c) for c in credentials):
                return
            self._thread = threading.Thread(
                target=self._run, args=(list(credentials),), name="access-credentials", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _run(self, credentials: list[Mapping[str, Any]]) -> None:
        log = get_logger()
        applied: str | None = None  # the digest of the Secrets last propagated successfully
        since_resync = 0.0
        # As KubeVirt's, the first look is one interval after the start: a guest just started has had the
        # time to bring its agent up, rather than being reported offline at once.
        while not self._stop.wait(self._interval):
            since_resync += self._interval
            digest = secrets_digest(credentials, self._base)
            if digest != applied or since_resync >= self._forced_resync:
                since_resync = 0.0
                outcome = propagate(self._agent, credentials, self._base)
                applied = digest if outcome.succeeded else None  # a failure is tried again next time
                if outcome != self._last:
                    log.info(
                        "access credentials propagated", succeeded=outcome.succeeded, reason=outcome.message
                    )
                    self._report(outcome)
                    self._last = outcome


def metadata_change(outcome: Outcome) -> Callable[[api.KubeVirtMetadata], None]:
    """The domain metadata update that records ``outcome`` for virt-handler."""

    def change(metadata: api.KubeVirtMetadata) -> None:
        metadata.access_credential = api.AccessCredentialMetadata(
            succeeded=outcome.succeeded, message=outcome.message
        )

    return change
