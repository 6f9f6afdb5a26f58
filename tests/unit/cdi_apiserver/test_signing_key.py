"""The signing key Secret: reused when present, created (labelled, owned as CDI owns it) when missing."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest

from kubevirt.cdi import token
from kubevirt.cdi_apiserver.signing_key import (
    SigningKeyError,
    get_or_create_signing_key,
    installer_labels,
)
from kubevirt.client import CONFIG_MAPS, AlreadyExistsError, ApiError
from kubevirt.client.resources import SECRETS, Resource
from kubevirt_testing.fake_kube_api import FakeKubeApi

NAMESPACE = "cdi"
NAME = "cdi-api-signing-key"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _stored_secret(key: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "data": {
            "id_rsa": _b64(token.private_key_pem(key)),
            "id_rsa.pub": _b64(token.public_key_pem(key.public_key())),
        },
    }


def _pem(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def test_an_existing_secret_is_reused_without_writes() -> None:
    api = FakeKubeApi()
    stored = token.new_signing_key()
    api.add(SECRETS, _stored_secret(stored))
    key = get_or_create_signing_key(api, NAMESPACE)
    assert token.private_key_pem(key) == token.private_key_pem(stored)
    assert api.writes == []


def test_a_missing_secret_is_created_with_both_keys_and_cdis_labels() -> None:
    api = FakeKubeApi()
    labels = {"app.kubernetes.io/part-of": "kubevirt", "app.kubernetes.io/version": "v1.6"}
    key = get_or_create_signing_key(api, NAMESPACE, labels)
    [secret] = api.objects_of(SECRETS)
    assert secret["metadata"]["name"] == NAME
    assert secret["metadata"]["namespace"] == NAMESPACE
    assert secret["type"] == "Opaque"
    assert secret["metadata"]["labels"] == {
        "cdi.kubevirt.io": "keystore",
        "app.kubernetes.io/managed-by": "cdi-apiserver",
        "app.kubernetes.io/component": "storage",
        "app.kubernetes.io/part-of": "kubevirt",
        "app.kubernetes.io/version": "v1.6",
    }
    assert "ownerReferences" not in secret["metadata"]  # no cdi-config ConfigMap: no owner, as in CDI
    assert _pem(secret, "id_rsa").startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert _pem(secret, "id_rsa.pub").startswith(b"-----BEGIN PUBLIC KEY-----")
    # The returned key is the stored one: what it signs verifies with the stored public key.
    minted = token.generate(token.upload_payload("ns", "disk"), key)
    assert token.validate(minted, token.load_public_key(_pem(secret, "id_rsa.pub"))).name == "disk"
    # And the next start reuses it.
    again = get_or_create_signing_key(api, NAMESPACE)
    assert token.private_key_pem(again) == token.private_key_pem(key)


def test_a_new_secret_is_owned_by_the_cr_controlling_cdi_config() -> None:
    api = FakeKubeApi()
    owner = {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "CDI",
        "name": "cdi",
        "uid": "u1",
        "controller": True,
    }
    api.add(
        CONFIG_MAPS, {"metadata": {"name": "cdi-config", "namespace": NAMESPACE, "ownerReferences": [owner]}}
    )
    get_or_create_signing_key(api, NAMESPACE)
    [secret] = api.objects_of(SECRETS)
    assert secret["metadata"]["ownerReferences"] == [owner]


def test_cdi_config_without_a_controller_is_an_error_as_in_cdi() -> None:
    api = FakeKubeApi()
    api.add(CONFIG_MAPS, {"metadata": {"name": "cdi-config", "namespace": NAMESPACE}})
    with pytest.raises(SigningKeyError, match="configmap has no owner"):
        get_or_create_signing_key(api, NAMESPACE)
    assert api.objects_of(SECRETS) == []


class _RacingApi(FakeKubeApi):
    """Another replica stores its Secret between our read and our create."""

    def __init__(self, theirs: dict[str, Any]) -> None:
        super().__init__()
        self._theirs = theirs

    def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        if resource.plural == "secrets" and self._theirs:
            theirs, self._theirs = self._theirs, {}
            self.add(SECRETS, theirs)
            raise AlreadyExistsError(409, "AlreadyExists", f'secrets "{NAME}" already exists')
        return super().create(resource, namespace, body, dry_run=dry_run)


def test_losing_the_creation_race_uses_the_winners_key() -> None:
    winner = token.new_signing_key()
    api = _RacingApi(_stored_secret(winner))
    key = get_or_create_signing_key(api, NAMESPACE)
    assert token.private_key_pem(key) == token.private_key_pem(winner)


def test_a_secret_without_a_private_key_is_an_error() -> None:
    api = FakeKubeApi()
    api.add(SECRETS, {"metadata": {"name": NAME, "namespace": NAMESPACE}, "data": {"other": _b64(b"x")}})
    with pytest.raises(SigningKeyError, match="Secret missing private key"):
        get_or_create_signing_key(api, NAMESPACE)


def test_a_secret_with_garbage_is_an_error() -> None:
    api = FakeKubeApi()
    api.add(SECRETS, {"metadata": {"name": NAME, "namespace": NAMESPACE}, "data": {"id_rsa": _b64(b"junk")}})
    with pytest.raises(SigningKeyError, match="Error parsing secret"):
        get_or_create_signing_key(api, NAMESPACE)


def test_an_unreadable_secret_is_the_api_error() -> None:
    api = FakeKubeApi()
    api.fail_with = ApiError(500, "InternalError", "etcd is down")
    with pytest.raises(ApiError):
        get_or_create_signing_key(api, NAMESPACE)


def test_installer_labels_come_from_cdis_variables() -> None:
    assert installer_labels({}) == {}
    assert installer_labels({"INSTALLER_PART_OF_LABEL": "kubevirt", "INSTALLER_VERSION_LABEL": ""}) == {
        "app.kubernetes.io/part-of": "kubevirt"
    }
    assert installer_labels({"INSTALLER_VERSION_LABEL": "v1.63.1"}) == {
        "app.kubernetes.io/version": "v1.63.1"
    }
