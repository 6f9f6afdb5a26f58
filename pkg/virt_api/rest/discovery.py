"""What the aggregated API tells clients about itself: root paths, the API group, the resource lists,
the server version and a minimal OpenAPI document. The shapes are KubeVirt's, including the group name
``subresource.kubevirt.io`` (sic) in the APIGroup object.
"""

from __future__ import annotations

from kubevirt.version import version_info
from kubevirt_api.view import JSON

GROUP = "subresources.kubevirt.io"
VERSIONS = ("v1", "v1alpha3")  # the first is the preferred one

SUBRESOURCES = (
    "expand-vm-spec",
    "virtualmachineinstances/vnc",
    "virtualmachineinstances/console",
    "virtualmachineinstances/portforward",
    "virtualmachineinstances/pause",
    "virtualmachineinstances/unpause",
    "virtualmachineinstances/freeze",
    "virtualmachineinstances/unfreeze",
    "virtualmachineinstances/reset",
    "virtualmachineinstances/softreboot",
    "virtualmachines/start",
    "virtualmachines/stop",
    "virtualmachines/restart",
    "virtualmachines/migrate",
    "virtualmachines/expand-spec",
    "virtualmachines/objectgraph",
    "virtualmachineinstances/guestosinfo",
    "virtualmachineinstances/userlist",
    "virtualmachineinstances/filesystemlist",
    "virtualmachineinstances/addvolume",
    "virtualmachineinstances/removevolume",
    "virtualmachineinstances/objectgraph",
    "virtualmachineinstances/sev/fetchcertchain",
    "virtualmachineinstances/sev/querylaunchmeasurement",
    "virtualmachineinstances/sev/setupsession",
    "virtualmachineinstances/sev/injectlaunchsecret",
)


def group_path() -> str:
    return f"/apis/{GROUP}"


def version_path(version: str) -> str:
    return f"/apis/{GROUP}/{version}"


def root_paths() -> JSON:
    paths = ["/apis", "/openapi/v2"]
    for version in VERSIONS:
        paths += [group_path(), version_path(version)]
    return {"paths": paths}


def api_group() -> JSON:
    def discovery(version: str) -> JSON:
        return {"groupVersion": f"{GROUP}/{version}", "version": version}

    return {
        "kind": "APIGroup",
        "name": "subresource.kubevirt.io",
        "versions": [discovery(version) for version in VERSIONS],
        "preferredVersion": discovery(VERSIONS[0]),
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    }


def api_group_list() -> JSON:
    return {"kind": "APIGroupList", "groups": [api_group()]}


def api_resource_list(version: str) -> JSON:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{version}",
        "resources": [
            {"name": name, "singularName": "", "namespaced": True, "kind": "", "verbs": None}
            for name in SUBRESOURCES
        ],
    }


def openapi_v2() -> JSON:
    """A Swagger 2.0 document naming the subresource paths (no schemas).

    The aggregator converts it to OpenAPI v3 and merges it into the API server's own document, so
    every operation is complete (parameters and responses): kube-apiserver 1.32 crashes converting an
    operation without them.
    """
    paths: JSON = {}
    for version in VERSIONS:
        base = f"{version_path(version)}/namespaces/{{namespace}}"
        for name in SUBRESOURCES:
            if "/" not in name:
                paths[f"{base}/{name}"] = {"put": _operation(f"{version}-{name}", ("namespace",))}
                continue
            resource, sub = name.split("/", 1)
            verb = "get" if sub in _READS else "put"
            operation = _operation(f"{version}-{resource}-{sub}", ("namespace", "name"))
            paths[f"{base}/{resource}/{{name}}/{sub}"] = {verb: operation}
    return {
        "swagger": "2.0",
        "info": {"title": "KubeVirt API", "version": version_info()["gitVersion"]},
        "paths": paths,
    }


def _operation(operation_id: str, path_parameters: tuple[str, ...]) -> JSON:
    parameters = [
        {"name": name, "in": "path", "required": True, "type": "string", "uniqueItems": True}
        for name in path_parameters
    ]
    return {
        "operationId": operation_id,
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "parameters": parameters,
        "responses": {"200": {"description": "OK"}, "401": {"description": "Unauthorized"}},
    }


_READS = {
    "vnc",
    "console",
    "portforward",
    "guestosinfo",
    "userlist",
    "filesystemlist",
    "expand-spec",
    "objectgraph",
    "sev/fetchcertchain",
    "sev/querylaunchmeasurement",
}
