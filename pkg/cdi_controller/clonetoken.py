"""Clone tokens on the controller's side, as CDI's: a clone across namespaces is allowed only with the
short token cdi-apiserver's DataVolume webhook signed when it authorized the user (issuer
``cdi-apiserver``, 5 minutes). The DataVolume controller checks it once and mints a long-lived token of its
own (issuer ``cdi-deployment``, bound to the DataVolume's UID) that travels to the target claim, so that a
claim waiting long for its first consumer can still be cloned, and a claim someone annotated by hand
cannot. Both are signed with the key in the ``cdi-api-signing-key`` Secret; same-namespace clones need none.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Mapping
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.cdi import token
from kubevirt.cdi_controller import meta
from kubevirt.client import KubeReader, NotFoundError
from kubevirt.client.resources import SECRETS
from kubevirt_api.cdi.constants import Annotation, Clone, Upload

EXTENDED_ISSUER: Final = "cdi-deployment"
PVC_RESOURCE: Final = "persistentvolumeclaims"


class CloneTokenError(Exception):
    """A token that is missing, does not verify, or is for another clone."""


class SigningKey:
    """The token key from its Secret, read when first needed (cdi-apiserver makes the Secret on its first
    start, which may come after this controller's)."""

    def __init__(self, api: KubeReader, namespace: str) -> None:
        self._api = api
        self._namespace = namespace
        self._key: rsa.RSAPrivateKey | None = None
        self._lock = threading.Lock()

    def private_key(self) -> rsa.RSAPrivateKey:
        with self._lock:
            if self._key is None:
                self._key = self._load()
            return self._key

    def public_key(self) -> rsa.RSAPublicKey:
        return self.private_key().public_key()

    def _load(self) -> rsa.RSAPrivateKey:
        try:
            secret = self._api.get(SECRETS, self._namespace, Upload.SIGNING_KEY_SECRET)
        except NotFoundError as err:
            where = f"{self._namespace}/{Upload.SIGNING_KEY_SECRET}"
            raise CloneTokenError(f"the token signing key Secret {where} does not exist yet") from err
        encoded = (secret.get("data") or {}).get(Upload.PRIVATE_KEY, "")
        try:
            return token.load_private_key(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError, token.TokenError) as err:
            raise CloneTokenError(f"the token signing key Secret holds no usable key: {err}") from err


def source_of(dv: Mapping[str, Any]) -> tuple[str, str]:
    """The namespace and name of a ``pvc`` source (its namespace defaults to the DataVolume's)."""
    source = ((dv.get("spec") or {}).get("source") or {}).get("pvc") or {}
    return str(source.get("namespace") or meta.namespace(dv)), str(source.get("name") or "")


def is_cross_namespace(dv: Mapping[str, Any]) -> bool:
    return source_of(dv)[0] != meta.namespace(dv)


def _check(payload: token.Payload, source: tuple[str, str], target: tuple[str, str], target_uid: str) -> None:
    uid = payload.params.get("uid", "")
    if (
        payload.operation != Upload.CLONE_TOKEN_OPERATION
        or (payload.namespace, payload.name) != source
        or payload.resource.get("resource") != PVC_RESOURCE
        or (payload.params.get("targetNamespace"), payload.params.get("targetName")) != target
        or (uid and uid != target_uid)
    ):
        raise CloneTokenError("invalid token")


def extended_token(dv: Mapping[str, Any], key: SigningKey) -> str:
    """Checks the webhook's short token of a cross-namespace clone and returns the controller's own, bound
    to the DataVolume's UID. Raises CloneTokenError."""
    short = meta.annotations_of(dv).get(Annotation.CLONE_TOKEN)
    if not short:
        raise CloneTokenError("clone token missing")
    try:
        payload = token.validate(short, key.public_key())
    except token.TokenError as err:
        raise CloneTokenError(f"error verifying token: {err}") from err
    _check(payload, source_of(dv), (meta.namespace(dv), meta.name(dv)), "")
    params = dict(payload.params) | {"uid": meta.uid(dv)}
    extended = token.Payload(
        operation=payload.operation,
        name=payload.name,
        namespace=payload.namespace,
        resource=dict(payload.resource),
        params=params,
    )
    return token.generate(
        extended, key.private_key(), issuer=EXTENDED_ISSUER, lifetime=Clone.EXTENDED_TOKEN_LIFETIME_SECONDS
    )


def check_claim(source: tuple[str, str], target: Mapping[str, Any], owner_uid: str, key: SigningKey) -> None:
    """Whether the target claim may receive ``source`` (namespace, name): always within a namespace,
    across namespaces only with a token for exactly this clone. Raises CloneTokenError."""
    if source[0] == meta.namespace(target):
        return
    annotations = meta.annotations_of(target)
    text, issuer = annotations.get(Annotation.EXTENDED_CLONE_TOKEN), EXTENDED_ISSUER
    if text is None:
        text, issuer = annotations.get(Annotation.CLONE_TOKEN), Upload.TOKEN_ISSUER
    if not text:
        raise CloneTokenError("clone token missing")
    try:
        payload = token.validate(text, key.public_key(), issuer=issuer)
    except token.TokenError as err:
        raise CloneTokenError(f"error verifying token: {err}") from err
    _check(payload, source, (meta.namespace(target), meta.name(target)), owner_uid)
