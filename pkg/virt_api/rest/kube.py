"""What the subresource handlers need from the Kubernetes API: the runtime's client plus ``dryRun``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kubevirt.client import JSON, ApiError, KubeApi, NotFoundError, Resource
from kubevirt.virt_api.rest.status import StatusError, internal, not_found

# The JSON patch library's wording for a failed ``test``; KubeVirt turns an error naming it into a 409.
# kube-apiserver (1.32) answers a failed test with a generic 422 ("the server rejected our request due to
# an error in our request") instead, which KubeVirt, and so this code, answers with 500.
JSONPATCH_TEST_FAILED = "jsonpatch test operation does not apply"


class SubresourceKube(KubeApi, Protocol):
    """:class:`kubevirt.client.KubeClient` and the in-memory fake both satisfy it."""

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: list[Any] | dict[str, Any],
        *,
        patch_type: str = "json",
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON: ...

    def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> JSON: ...


def get_or_none(api: KubeApi, resource: Resource, namespace: str, name: str, what: str) -> JSON | None:
    """The object, or None when it does not exist; other failures are a 500."""
    try:
        return api.get(resource, namespace, name)
    except NotFoundError:
        return None
    except ApiError as err:
        raise internal(f"unable to retrieve {what} [{name}]: {err.message}") from None


def get_or_404(api: KubeApi, resource: Resource, namespace: str, name: str, kind: str, what: str) -> JSON:
    found = get_or_none(api, resource, namespace, name, what)
    if found is None:
        raise not_found(kind, name)
    return found


def patch_failure(kind: str, name: str, err: ApiError, conflict: Any) -> StatusError:
    """A failed ``test`` is a 409 (someone else changed the object first); anything else a 500."""
    if JSONPATCH_TEST_FAILED in err.message:
        result: StatusError = conflict(kind, name, err.message)
        return result
    return internal(err.message)
