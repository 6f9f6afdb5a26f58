"""What the token API tells the aggregator and kubectl about itself: the root paths, the API group, the
resource list and a small Swagger 2.0 document, in the shapes CDI's apiserver writes."""

from __future__ import annotations

from kubevirt.version import get_version
from kubevirt_api.cdi.constants import UPLOAD_GROUP
from kubevirt_api.view import JSON

GROUP = UPLOAD_GROUP
VERSIONS = ("v1beta1",)  # the first is the preferred one
RESOURCE = "uploadtokenrequests"
KIND = "UploadTokenRequest"
HEALTHZ = "/healthz"
OPENAPI = "/openapi/v2"
GROUP_PATH = f"/apis/{GROUP}"
# Only the create verb: the server keeps no UploadTokenRequest objects.
VERBS = ("create",)
SHORT_NAMES = ("utr", "utrs")


def version_path(version: str) -> str:
    return f"{GROUP_PATH}/{version}"


def token_path(version: str) -> str:
    return f"{version_path(version)}/namespaces/{{namespace}}/{RESOURCE}"


def root_paths() -> JSON:
    paths = ["/apis", "/apis/", OPENAPI, GROUP_PATH, HEALTHZ, *(version_path(v) for v in VERSIONS)]
    return {"paths": sorted(paths)}


def _group_version(version: str) -> JSON:
    return {"groupVersion": f"{GROUP}/{version}", "version": version}


def api_group() -> JSON:
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [_group_version(version) for version in VERSIONS],
        "preferredVersion": _group_version(VERSIONS[0]),
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    }


def api_group_list() -> JSON:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group()]}


def api_resource_list(version: str) -> JSON:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{version}",
        "resources": [
            {
                "name": RESOURCE,
                "singularName": "uploadtokenrequest",
                "namespaced": True,
                "group": GROUP,
                "version": version,
                "kind": KIND,
                "verbs": list(VERBS),
                "shortNames": list(SHORT_NAMES),
            }
        ],
    }


def openapi_v2() -> JSON:
    """The create operation and the resource list per version, with the UploadTokenRequest schemas.

    Every operation carries parameters and responses: the aggregator converts the document to OpenAPI
    v3 and merges it into the API server's, which fails on incomplete operations. The object's metadata
    is left an open object rather than a reference, so the document stands on its own."""
    paths: JSON = {}
    for version in VERSIONS:
        paths[f"{version_path(version)}/"] = {"get": _resource_list_operation(version)}
        paths[token_path(version)] = {"post": _create_operation(version)}
    return {
        "swagger": "2.0",
        "info": {
            "title": "KubeVirt Containerized Data Importer API",
            "description": "Containerized Data Importer for KubeVirt.",
            "version": f"v{get_version()}",
        },
        "paths": paths,
        "definitions": _definitions(),
        "securityDefinitions": {
            "BearerToken": {
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
                "description": "Bearer Token authentication",
            }
        },
    }


_REQUEST_REF = {"$ref": f"#/definitions/v1beta1.{KIND}"}


def _create_operation(version: str) -> JSON:
    return {
        "description": "Create an UploadTokenRequest object.",
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "operationId": f"createNamespaced{KIND}-{version}",
        "parameters": [
            {"name": "body", "in": "body", "required": True, "schema": _REQUEST_REF},
            {
                "type": "string",
                "description": "Object name and auth scope, such as for teams and projects",
                "name": "namespace",
                "in": "path",
                "required": True,
            },
        ],
        "responses": {
            "200": {"description": "OK", "schema": _REQUEST_REF},
            "201": {"description": "Created", "schema": _REQUEST_REF},
            "202": {"description": "Accepted", "schema": _REQUEST_REF},
            "401": {"description": "Unauthorized"},
        },
    }


def _resource_list_operation(version: str) -> JSON:
    return {
        "description": "Get a CDI API resources",
        "produces": ["application/json"],
        "operationId": f"getAPIResources-{version}",
        "parameters": [],
        "responses": {
            "200": {"description": "OK", "schema": {"type": "object"}},
            "401": {"description": "Unauthorized"},
            "404": {"description": "Not Found"},
        },
    }


def _definitions() -> JSON:
    def text(description: str) -> JSON:
        return {"description": description, "type": "string"}

    return {
        f"v1beta1.{KIND}": {
            "description": "UploadTokenRequest is the CR used to initiate a CDI upload",
            "type": "object",
            "required": ["spec"],
            "properties": {
                "apiVersion": text("APIVersion defines the versioned schema of this representation."),
                "kind": text("Kind is a string value representing the REST resource this object represents."),
                "metadata": {"type": "object"},
                "spec": {
                    "description": "Spec contains the parameters of the request",
                    "$ref": f"#/definitions/v1beta1.{KIND}Spec",
                },
                "status": {
                    "description": "Status contains the status of the request",
                    "$ref": f"#/definitions/v1beta1.{KIND}Status",
                },
            },
        },
        f"v1beta1.{KIND}Spec": {
            "description": "UploadTokenRequestSpec defines the parameters of the token request",
            "type": "object",
            "required": ["pvcName"],
            "properties": {"pvcName": text("PvcName is the name of the PVC to upload to")},
        },
        f"v1beta1.{KIND}Status": {
            "description": "UploadTokenRequestStatus stores the status of a token request",
            "type": "object",
            "properties": {
                "token": text('Token is a JWT token to be inserted in "Authentication Bearer header"')
            },
        },
    }
