"""CDI's upload and clone tokens: JWTs signed PS256 by cdi-apiserver's key and checked by the upload proxy.

The claims are CDI's (``pkg/token``): its payload (``operation``, ``name``, ``namespace``, ``resource`` as a
group/version/resource, optional ``params``) beside the registered ``iss``, ``iat``, ``nbf`` and ``exp``, so a
token minted here verifies in CDI's proxy and the other way round.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt_api.cdi.constants import Upload

ALGORITHM = "PS256"
SIGNING_KEY_BITS = 2048
PVC_RESOURCE = {"group": "", "version": "v1", "resource": "persistentvolumeclaims"}
SNAPSHOT_RESOURCE = {"group": "snapshot.storage.k8s.io", "version": "v1", "resource": "volumesnapshots"}
# The params of a clone token: where the clone goes.
TARGET_NAMESPACE_PARAM = "targetNamespace"
TARGET_NAME_PARAM = "targetName"


class TokenError(Exception):
    """A token that does not verify: bad signature, wrong issuer, expired, not yet valid or malformed."""


@dataclass(frozen=True)
class Payload:
    operation: str
    name: str
    namespace: str
    resource: dict[str, str] = field(default_factory=lambda: dict(PVC_RESOURCE))
    params: dict[str, str] = field(default_factory=dict)

    def claims(self) -> dict[str, Any]:
        # CDI omits empty fields (omitempty); the group of a core resource is "" and so is left out too.
        claims: dict[str, Any] = {
            "operation": self.operation,
            "name": self.name,
            "namespace": self.namespace,
            "resource": {k: v for k, v in self.resource.items() if v},
        }
        if self.params:
            claims["params"] = dict(self.params)
        return {k: v for k, v in claims.items() if v}


def upload_payload(namespace: str, claim: str) -> Payload:
    return Payload(operation=Upload.TOKEN_OPERATION, name=claim, namespace=namespace)


def clone_payload(
    source_namespace: str,
    source_name: str,
    target_namespace: str,
    target_name: str,
    *,
    snapshot: bool = False,
) -> Payload:
    """What cdi-apiserver's DataVolume webhook grants: cloning the claim (or VolumeSnapshot) of that name
    into the target DataVolume."""
    return Payload(
        operation=Upload.CLONE_TOKEN_OPERATION,
        name=source_name,
        namespace=source_namespace,
        resource=dict(SNAPSHOT_RESOURCE if snapshot else PVC_RESOURCE),
        params={TARGET_NAMESPACE_PARAM: target_namespace, TARGET_NAME_PARAM: target_name},
    )


def generate(
    payload: Payload,
    private_key: rsa.RSAPrivateKey,
    *,
    issuer: str = Upload.TOKEN_ISSUER,
    lifetime: float = Upload.TOKEN_LIFETIME_SECONDS,
    now: float | None = None,
) -> str:
    issued = int(time.time() if now is None else now)
    claims = payload.claims() | {"iss": issuer, "iat": issued, "nbf": issued, "exp": issued + int(lifetime)}
    return jwt.encode(claims, private_key, algorithm=ALGORITHM)


def validate(
    token: str,
    public_key: rsa.RSAPublicKey,
    *,
    issuer: str = Upload.TOKEN_ISSUER,
    leeway: float = Upload.TOKEN_LEEWAY_SECONDS,
) -> Payload:
    try:
        claims = jwt.decode(
            token,
            public_key,
            algorithms=[ALGORITHM],
            issuer=issuer,
            leeway=leeway,
            options={"require": ["iss", "exp"]},
        )
    except jwt.PyJWTError as err:
        raise TokenError(str(err)) from err
    resource = claims.get("resource") or {}
    params = claims.get("params") or {}
    if not isinstance(resource, dict) or not isinstance(params, dict):
        raise TokenError("token claims resource and params must be objects")
    return Payload(
        operation=str(claims.get("operation", "")),
        name=str(claims.get("name", "")),
        namespace=str(claims.get("namespace", "")),
        resource={k: str(resource.get(k, "")) for k in ("group", "version", "resource")},
        params={str(k): str(v) for k, v in params.items()},
    )


def new_signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=SIGNING_KEY_BITS)


def private_key_pem(key: rsa.RSAPrivateKey) -> bytes:
    # PKCS#1 ("RSA PRIVATE KEY"), as CDI's keystore writes id_rsa.
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def public_key_pem(key: rsa.RSAPublicKey) -> bytes:
    # PKIX ("PUBLIC KEY"), as CDI's keystore writes id_rsa.pub.
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def load_private_key(pem: bytes) -> rsa.RSAPrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise TokenError("the signing key is not an RSA key")
    return key


def load_public_key(pem: bytes) -> rsa.RSAPublicKey:
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, rsa.RSAPublicKey):
        raise TokenError("the signing key is not an RSA key")
    return key
