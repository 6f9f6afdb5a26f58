"""Whether a subject may clone what a DataVolume clones (CDI's ``DataVolume.AuthorizeUser`` and
``AuthorizeSA``): cdi-apiserver asks it for the user creating a DataVolume, virt-controller for the
service account a VM runs as.

A DataVolume clones when its ``spec.source`` names a PVC or a VolumeSnapshot, or its ``spec.sourceRef``
names a DataSource that does (the DataSource's own source, or the one its status resolved when it refers
to another DataSource). Cloning from the subject's home namespace (the user's target namespace, the
service account's own) needs no review; from another, SubjectAccessReviews ask whether the subject may
create the ``datavolumes/source`` subresource there, or (implicitly) pods, and for a snapshot also
claims, named as the source.

A DataVolume annotated pre-populated or check-static-volume may need no token at all: a DataSource or
source namespace the lookups report as not found (:class:`~kubevirt.client.NotFoundError`), or a refused
review, then lets it through without one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubevirt.client import ApiError, KubeApi, NotFoundError
from kubevirt.client.resources import DATA_SOURCES, DATA_VOLUMES, NAMESPACES, SUBJECT_ACCESS_REVIEWS
from kubevirt.service.aggregation.authorizer import subject_access_review
from kubevirt_api.cdi.constants import Annotation
from kubevirt_api.view import JSON

CLONE_SOURCE_SUBRESOURCE: Final = "source"
DATA_SOURCE_KIND: Final = "DataSource"
PVC: Final = "pvc"
SNAPSHOT: Final = "snapshot"
# Either lets a DataVolume whose claim is (or may be) populated already go on without a token.
_NO_TOKEN_ANNOTATIONS: Final = (Annotation.PRE_POPULATED, Annotation.CHECK_STATIC_VOLUME)


class CloneAuthError(Exception):
    """The decision could not be made (a lookup or a review failed); the message is the cause's."""


@dataclass(frozen=True)
class ClusterAccess:
    """The cluster calls a decision makes. Each raises :class:`~kubevirt.client.ApiError` on failure
    (:class:`~kubevirt.client.NotFoundError` for a missing object, which the no-token annotations
    forgive) or :class:`CloneAuthError`, which nothing forgives."""

    create_review: Callable[[JSON], Mapping[str, Any]]
    get_namespace: Callable[[str], Mapping[str, Any]]
    get_data_source: Callable[[str, str], Mapping[str, Any]]

    @classmethod
    def over(cls, api: KubeApi) -> ClusterAccess:
        return cls(
            create_review=lambda review: api.create(SUBJECT_ACCESS_REVIEWS, None, review),
            get_namespace=lambda name: api.get(NAMESPACES, None, name),
            get_data_source=lambda namespace, name: api.get(DATA_SOURCES, namespace, name),
        )


@dataclass(frozen=True)
class CloneSource:
    """A PVC or a VolumeSnapshot to clone from; ``namespace`` empty means the target's."""

    kind: str
    name: str
    namespace: str

    @property
    def is_snapshot(self) -> bool:
        return self.kind == SNAPSHOT


@dataclass(frozen=True)
class Subject:
    """Who is asked about: the SubjectAccessReview's user, groups and extra. A clone from ``home`` (the
    target's namespace when None) needs no review."""

    user: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, list[str]] | None = None
    home: str | None = None

    def spec(self) -> JSON:
        # Go leaves out empty groups and extras.
        spec: JSON = {"user": self.user}
        if self.groups:
            spec["groups"] = list(self.groups)
        if self.extra:
            spec["extra"] = {key: list(values) for key, values in self.extra.items()}
        return spec


def service_account_subject(namespace: str, name: str) -> Subject:
    """A service account as the API server authenticates it; its own namespace is its home."""
    return Subject(
        user=f"system:serviceaccount:{namespace}:{name}",
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        home=namespace,
    )


@dataclass(frozen=True)
class CloneAuthorization:
    """The answer: ``allowed`` with ``reason`` when not; ``source`` (None when not cloning) and
    ``source_namespace`` (defaulted) for the token; ``token_needed`` False when none is to be added."""

    allowed: bool
    token_needed: bool
    source: CloneSource | None = None
    source_namespace: str = ""
    reason: str = ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _source_in(source: Mapping[str, Any]) -> CloneSource | None:
    """The PVC (first) or the snapshot a ``source`` names."""
    for kind in (PVC, SNAPSHOT):
        if source.get(kind) is not None:
            named = _mapping(source[kind])
            return CloneSource(kind, str(named.get("name") or ""), str(named.get("namespace") or ""))
    return None


def clone_source(
    dv: Mapping[str, Any], target_namespace: str, get_data_source: Callable[[str, str], Mapping[str, Any]]
) -> CloneSource | None:
    """What ``dv`` clones, None when it does not. Raises what ``get_data_source`` raises."""
    spec = _mapping(dv.get("spec"))
    if spec.get("source") is not None:
        return _source_in(_mapping(spec["source"]))
    ref = _mapping(spec.get("sourceRef"))
    if not ref or ref.get("kind") != DATA_SOURCE_KIND:
        return None
    namespace = str(ref.get("namespace") or target_namespace)
    data_source = get_data_source(namespace, str(ref.get("name") or ""))
    source = _mapping(_mapping(data_source.get("spec")).get("source"))
    if source.get("dataSource") is not None:
        # A DataSource pointing at another: its status holds the resolved source.
        source = _mapping(_mapping(data_source.get("status")).get("source"))
    return _source_in(source)


def _api_message(err: ApiError) -> str:
    # Go's error text for an API failure is the Status message alone.
    return err.message or str(err)


def _clone_source_attributes(namespace: str, name: str) -> JSON:
    return {
        "namespace": namespace,
        "verb": "create",
        "group": DATA_VOLUMES.group,
        "resource": DATA_VOLUMES.plural,
        "subresource": CLONE_SOURCE_SUBRESOURCE,
        "name": name,
    }


def _create_attributes(namespace: str, name: str, resource: str) -> JSON:
    return {"namespace": namespace, "verb": "create", "resource": resource, "name": name}


def _allowed(access: ClusterAccess, subject: Subject, attributes: JSON) -> bool:
    review = subject_access_review({**subject.spec(), "resourceAttributes": attributes})
    try:
        answer = access.create_review(review)
    except ApiError as err:
        raise CloneAuthError(_api_message(err)) from err
    return bool(_mapping(answer.get("status")).get("allowed"))


def may_clone(access: ClusterAccess, subject: Subject, source: CloneSource, namespace: str) -> bool:
    """Whether ``subject`` may clone ``source`` from ``namespace``: for a claim either review allowed is
    enough (checked in order, stopping at the first yes); for a snapshot the explicit one, or else both
    implicit ones (stopping at the first no)."""
    explicit = _clone_source_attributes(namespace, source.name)
    if not source.is_snapshot:
        implicit = _create_attributes(namespace, source.name, "pods")
        return any(_allowed(access, subject, attributes) for attributes in (explicit, implicit))
    if _allowed(access, subject, explicit):
        return True
    return all(
        _allowed(access, subject, _create_attributes(namespace, source.name, kind))
        for kind in ("pods", "pvcs")
    )


def target_namespace(dv: Mapping[str, Any], request_namespace: str) -> str:
    """The namespace ``dv`` is created in: its own, else the request's."""
    return str(_mapping(dv.get("metadata")).get("namespace") or request_namespace)


def authorize(
    dv: Mapping[str, Any], request_namespace: str, access: ClusterAccess, subject: Subject
) -> CloneAuthorization:
    """Whether ``subject`` may create ``dv`` (arriving for ``request_namespace``). Raises
    :class:`CloneAuthError` when that cannot be told."""
    annotations = _mapping(_mapping(dv.get("metadata")).get("annotations"))
    no_token_okay = any(annotation in annotations for annotation in _NO_TOKEN_ANNOTATIONS)
    target = target_namespace(dv, request_namespace)
    try:
        source = clone_source(dv, target, access.get_data_source)
    except NotFoundError as err:
        if no_token_okay:
            return CloneAuthorization(allowed=True, token_needed=False)
        raise CloneAuthError(_api_message(err)) from err
    except ApiError as err:
        raise CloneAuthError(_api_message(err)) from err
    if source is None:
        return CloneAuthorization(allowed=True, token_needed=False)
    source_namespace = source.namespace or target
    passed = CloneAuthorization(True, False, source, source_namespace)
    try:
        access.get_namespace(source_namespace)
    except NotFoundError as err:
        if no_token_okay:
            return passed
        raise CloneAuthError(_api_message(err)) from err
    except ApiError as err:
        raise CloneAuthError(_api_message(err)) from err
    home = subject.home or target
    if source_namespace == home or may_clone(access, subject, source, source_namespace):
        return CloneAuthorization(True, True, source, source_namespace)
    if no_token_okay:
        return passed
    reason = f"User {subject.user} has insufficient permissions in clone source namespace {source_namespace}"
    return CloneAuthorization(False, False, source, source_namespace, reason)


def authorize_service_account(
    dv: Mapping[str, Any],
    request_namespace: str,
    access: ClusterAccess,
    sa_namespace: str,
    sa_name: str,
) -> CloneAuthorization:
    """:func:`authorize` for service account ``sa_name`` of ``sa_namespace`` (the target's when empty)."""
    subject = service_account_subject(sa_namespace or target_namespace(dv, request_namespace), sa_name)
    return authorize(dv, request_namespace, access, subject)
