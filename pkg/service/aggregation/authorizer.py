"""Deciding a request behind the aggregator: open paths pass, the rest need the front proxy's certificate
and a SubjectAccessReview that allows them.

Each server says which of its paths are open and what review a request needs; the order of the checks
and how an answer becomes a decision are the same everywhere.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubevirt.client import KubeClient
from kubevirt.client.resources import SUBJECT_ACCESS_REVIEWS
from kubevirt.service.aggregation.identity import RequestHeaderNames
from kubevirt_api.view import JSON

NOT_AUTHENTICATED = "request is not authenticated"


class ReviewNotPossibleError(ValueError):
    """The request cannot be put into a SubjectAccessReview; the message is the 401's reason."""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def subject_access_review(spec: JSON) -> JSON:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def review_poster(client: KubeClient) -> Callable[[JSON], JSON]:
    """Posts a SubjectAccessReview and returns the API server's answer."""

    def create_review(review: JSON) -> JSON:
        return client.create(SUBJECT_ACCESS_REVIEWS, None, review)

    return create_review


@dataclass
class RequestAuthorizer(ABC):
    """Decides one request; ``create_review`` posts a SubjectAccessReview and returns the answer."""

    create_review: Callable[[JSON], JSON]
    names: RequestHeaderNames = field(default_factory=RequestHeaderNames)

    @abstractmethod
    def is_open(self, path: str) -> bool:
        """Whether the (encoded) path is served to anyone."""

    @abstractmethod
    def review(self, path: str, method: str, headers: Sequence[tuple[str, str]]) -> JSON:
        """The SubjectAccessReview the request needs; raises ReviewNotPossibleError when there is none."""

    def decide(
        self, path: str, method: str, has_client_certificate: bool, headers: Sequence[tuple[str, str]]
    ) -> Decision:
        """``path`` is the encoded path; ``headers`` keeps repeated headers (groups, extras). Raises what
        ``create_review`` raises when the review could not be made (a 500)."""
        if self.is_open(path):
            return Decision(True)
        if not has_client_certificate:
            return Decision(False, NOT_AUTHENTICATED)
        try:
            review = self.review(path, method, headers)
        except ReviewNotPossibleError as err:
            return Decision(False, str(err))
        answer = self.create_review(review)
        status = answer.get("status") or {}
        if status.get("allowed"):
            return Decision(True)
        return Decision(False, str(status.get("reason") or ""))
