"""The key upload tokens are signed with, kept in the ``cdi-api-signing-key`` Secret of the install
namespace (PEM under ``id_rsa`` and ``id_rsa.pub``), created on first start as CDI's keystore does.

A Secret created here is labelled as CDI's installer labels it and, when the ``cdi-config`` ConfigMap
says which CDI CR is active, owned by that CR. Replicas racing to create it all end up with the one
that was stored first.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.cdi import token
from kubevirt.client import CONFIG_MAPS, AlreadyExistsError, ApiError, KubeApi, NotFoundError
from kubevirt.client.resources import SECRETS
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import COMPONENT_LABEL, MANAGED_BY_LABEL, Label, Upload
from kubevirt_api.view import JSON

# CDI's installer labels, read from the environment of its pods.
PART_OF_ENV = "INSTALLER_PART_OF_LABEL"
VERSION_ENV = "INSTALLER_VERSION_LABEL"
PART_OF_LABEL = "app.kubernetes.io/part-of"
VERSION_LABEL = "app.kubernetes.io/version"
# The ConfigMap whose controlling owner is the active CDI CR (CDI's operator.ConfigMapName).
CDI_CONFIG_MAP = "cdi-config"
KEYSTORE = "keystore"


class SigningKeyError(RuntimeError):
    """The Secret holds no usable key, or the CDI CR owning new objects cannot be told."""


def installer_labels(environ: Mapping[str, str]) -> dict[str, str]:
    """``app.kubernetes.io/part-of`` and ``/version`` from the installer's variables, when set."""
    labels: dict[str, str] = {}
    if environ.get(PART_OF_ENV):
        labels[PART_OF_LABEL] = environ[PART_OF_ENV]
    if environ.get(VERSION_ENV):
        labels[VERSION_LABEL] = environ[VERSION_ENV]
    return labels


def get_or_create_signing_key(
    api: KubeApi, namespace: str, labels: Mapping[str, str] | None = None
) -> rsa.RSAPrivateKey:
    """The stored key, or a new one stored first. Raises :class:`~kubevirt.client.ApiError` when the
    Secret can be neither read nor created, :class:`SigningKeyError` when it holds no RSA key."""
    name = Upload.SIGNING_KEY_SECRET
    try:
        secret = api.get(SECRETS, namespace, name)
    except NotFoundError:
        key = token.new_signing_key()
        try:
            secret = api.create(SECRETS, namespace, signing_key_secret(api, namespace, key, labels or {}))
            get_logger().info("created the token signing key", secret=name, namespace=namespace)
        except AlreadyExistsError:
            # Another replica won the race: use its key, so that every replica signs alike.
            secret = api.get(SECRETS, namespace, name)
    return _private_key(secret)


def signing_key_secret(
    api: KubeApi, namespace: str, key: rsa.RSAPrivateKey, labels: Mapping[str, str]
) -> JSON:
    metadata: JSON = {
        "name": Upload.SIGNING_KEY_SECRET,
        "namespace": namespace,
        # CDI's keystore label, then its recommended labels, then the installer's over both.
        "labels": {
            Label.COMPONENT: KEYSTORE,
            MANAGED_BY_LABEL: Upload.APISERVER,
            COMPONENT_LABEL: "storage",
            **labels,
        },
    }
    owner = _active_cdi(api, namespace)
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "data": {
            Upload.PRIVATE_KEY: _encoded(token.private_key_pem(key)),
            Upload.PUBLIC_KEY: _encoded(token.public_key_pem(key.public_key())),
        },
    }


def _active_cdi(api: KubeApi, namespace: str) -> JSON | None:
    """The controller reference of ``cdi-config`` (the CDI CR); None, logged, when the ConfigMap cannot
    be read (CDI goes on without an owner then)."""
    try:
        config_map = api.get(CONFIG_MAPS, namespace, CDI_CONFIG_MAP)
    except ApiError:
        get_logger().warning(f"ConfigMap {CDI_CONFIG_MAP} does not exist, so not assigning owner")
        return None
    for reference in (config_map.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return dict(reference)
    raise SigningKeyError("configmap has no owner")


def _private_key(secret: JSON) -> rsa.RSAPrivateKey:
    pem = _decoded((secret.get("data") or {}).get(Upload.PRIVATE_KEY))
    if pem is None:
        raise SigningKeyError("Secret missing private key")
    try:
        return token.load_private_key(pem)
    except (ValueError, token.TokenError) as err:
        raise SigningKeyError(f"Error parsing secret: {err}") from None


def _encoded(pem: bytes) -> str:
    return base64.b64encode(pem).decode("ascii")


def _decoded(value: object) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        return None
