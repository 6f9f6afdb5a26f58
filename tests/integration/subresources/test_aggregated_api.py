"""The subresource API through the real API server: discovery, lifecycle calls, authentication and
authorisation, with virt-api running as its own process behind an APIService."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time

import aiohttp
import pytest
import urllib3
from localcluster.apiserver import ApiServer

from kubevirt.client import (
    VIRTUAL_MACHINES,
    AlreadyExistsError,
    ApiError,
    KubeClient,
    NotFoundError,
)
from kubevirt.client.errors import error_from_response
from kubevirt.client.resources import CLUSTER_ROLES, ROLE_BINDINGS, ROLES
from kubevirt.virt_operator.resource.cluster_roles import cluster_roles
from kubevirt_testing.aggregated import AggregatedVirtApi, create_vm, create_vmi

BASE = "/apis/subresources.kubevirt.io/v1"


def test_discovery_through_the_aggregator(aggregated_virt_api: AggregatedVirtApi, kube: KubeClient) -> None:
    for version in ("v1", "v1alpha3"):
        listed = json.loads(kube.request("GET", f"/apis/subresources.kubevirt.io/{version}"))
        assert listed["kind"] == "APIResourceList"
        assert listed["groupVersion"] == f"subresources.kubevirt.io/{version}"
        names = {resource["name"] for resource in listed["resources"]}
        assert {"virtualmachines/start", "virtualmachineinstances/pause", "expand-vm-spec"} <= names
    version = json.loads(kube.request("GET", f"{BASE}/version"))
    assert version["gitVersion"].startswith("v")
    groups = json.loads(kube.request("GET", "/apis"))
    assert "subresources.kubevirt.io" in {group["name"] for group in groups["groups"]}


def test_start_and_stop_through_the_aggregator(
    aggregated_virt_api: AggregatedVirtApi, kube: KubeClient, namespace: str
) -> None:
    create_vm(kube, namespace, "vm", "Halted")
    kube.request("PUT", f"{BASE}/namespaces/{namespace}/virtualmachines/vm/start", body={})
    assert kube.get(VIRTUAL_MACHINES, namespace, "vm")["spec"]["runStrategy"] == "Always"
    with pytest.raises(ApiError) as refused:
        kube.request("PUT", f"{BASE}/namespaces/{namespace}/virtualmachines/vm/start")
    assert refused.value.status == 409
    assert refused.value.message == (
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm": '
        "Always does not support manual start requests"
    )
    kube.request("PUT", f"{BASE}/namespaces/{namespace}/virtualmachines/vm/stop", body={"dryRun": ["All"]})
    assert kube.get(VIRTUAL_MACHINES, namespace, "vm")["spec"]["runStrategy"] == "Always"
    kube.request("PUT", f"{BASE}/namespaces/{namespace}/virtualmachines/vm/stop")
    assert kube.get(VIRTUAL_MACHINES, namespace, "vm")["spec"]["runStrategy"] == "Halted"


def test_paused_start_of_a_manual_vm_writes_a_state_change_request(
    aggregated_virt_api: AggregatedVirtApi, kube: KubeClient, namespace: str
) -> None:
    create_vm(kube, namespace, "vm", "Manual")
    kube.request("PUT", f"{BASE}/namespaces/{namespace}/virtualmachines/vm/start", body={"paused": True})
    status = kube.get(VIRTUAL_MACHINES, namespace, "vm")["status"]
    assert status["stateChangeRequests"] == [{"action": "Start", "data": {"paused": "true"}}]
    with pytest.raises(ApiError) as refused:
        kube.request("PUT", f"{BASE}/namespaces/{namespace}/virtualmachines/vm/start")
    assert refused.value.status == 500
    assert (
        refused.value.message
        == "Internal error occurred: unable to complete request: stop/start already underway"
    )


def test_refusals_carry_status_bodies(
    aggregated_virt_api: AggregatedVirtApi, kube: KubeClient, namespace: str
) -> None:
    with pytest.raises(ApiError) as missing:
        kube.request("PUT", f"{BASE}/namespaces/{namespace}/virtualmachines/absent/restart")
    assert (missing.value.status, missing.value.reason) == (404, "NotFound")
    assert missing.value.message == 'virtualmachine.kubevirt.io "absent" not found'
    create_vm(kube, namespace, "vm", "Halted")
    with pytest.raises(ApiError) as malformed:
        kube.request(
            "PUT", f"{BASE}/namespaces/{namespace}/virtualmachines/vm/stop", body={"gracePeriod": "soon"}
        )
    assert malformed.value.status == 400
    assert malformed.value.message.startswith("Can not unmarshal Request body to struct, error: ")
    with pytest.raises(ApiError) as paused:
        kube.request("PUT", f"{BASE}/namespaces/{namespace}/virtualmachineinstances/vm/pause")
    assert paused.value.status == 404


def test_rbac_on_the_subresource_decides(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vm(kube, namespace, "vm", "Halted")
    path = f"{BASE}/namespaces/{namespace}/virtualmachines/vm/start"
    with pytest.raises(ApiError) as denied:
        _request_as(aggregated_virt_api, apiserver, "PUT", path, "alice")
    assert denied.value.status == 403  # the API server's own authorisation already refuses
    kube.create(
        ROLES,
        namespace,
        {
            "metadata": {"name": "starter"},
            "rules": [
                {
                    "apiGroups": ["subresources.kubevirt.io"],
                    "resources": ["virtualmachines/start"],
                    "verbs": ["update"],
                }
            ],
        },
    )
    kube.create(
        ROLE_BINDINGS,
        namespace,
        {
            "metadata": {"name": "alice-starts"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "starter"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
        },
    )
    _request_as(aggregated_virt_api, apiserver, "PUT", path, "alice")
    assert kube.get(VIRTUAL_MACHINES, namespace, "vm")["spec"]["runStrategy"] == "Always"


def _bind(kube: KubeClient, namespace: str, user: str, cluster_role: str) -> None:
    kube.create(
        ROLE_BINDINGS,
        namespace,
        {
            "metadata": {"name": f"{user}-{cluster_role.replace(':', '-')}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    )


def test_the_operators_view_role_may_not_start_or_connect_and_the_edit_role_may(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    for role in cluster_roles():
        if role["metadata"]["name"] in ("kubevirt.io:view", "kubevirt.io:edit"):
            with contextlib.suppress(AlreadyExistsError):
                kube.create(CLUSTER_ROLES, None, role)
    _bind(kube, namespace, "viola", "kubevirt.io:view")
    _bind(kube, namespace, "eddie", "kubevirt.io:edit")
    create_vm(kube, namespace, "vm", "Halted")
    create_vmi(kube, namespace, "vmi", {"phase": "Running", "nodeName": "node01"})
    start = f"{BASE}/namespaces/{namespace}/virtualmachines/vm/start"
    console = f"{BASE}/namespaces/{namespace}/virtualmachineinstances/vmi/console"

    # The API server reviews the subresource before it proxies: the view role holds no start or console.
    refusals = {
        start: ("update", "virtualmachines/start"),
        console: ("get", "virtualmachineinstances/console"),
    }
    for path, (verb, resource) in refusals.items():
        with pytest.raises(ApiError) as denied:
            _request_as(aggregated_virt_api, apiserver, "PUT" if verb == "update" else "GET", path, "viola")
        kind = resource.split("/", maxsplit=1)[0]
        name = "vm" if kind == "virtualmachines" else "vmi"
        assert (denied.value.status, denied.value.message) == (
            403,
            f'{kind}.subresources.kubevirt.io "{name}" is forbidden: User "viola" cannot {verb} resource '
            f'"{resource}" in API group "subresources.kubevirt.io" in the namespace "{namespace}"',
        )
    assert _websocket(aggregated_virt_api, apiserver, console, "viola")[0] == 403
    # virt-api's own SubjectAccessReview agrees when asked directly (KubeVirt answers 401, not 403).
    viola = {"X-Remote-User": "viola", "X-Remote-Group": "system:authenticated"}
    assert _direct(aggregated_virt_api, "PUT", start, viola, client_cert=True).status == 401
    assert _direct(aggregated_virt_api, "GET", console, viola, client_cert=True).status == 401
    assert kube.get(VIRTUAL_MACHINES, namespace, "vm")["spec"]["runStrategy"] == "Halted"

    # The edit role may do both.
    _request_as(aggregated_virt_api, apiserver, "PUT", start, "eddie")
    assert kube.get(VIRTUAL_MACHINES, namespace, "vm")["spec"]["runStrategy"] == "Always"
    assert _websocket(aggregated_virt_api, apiserver, console, "eddie") == (101, b"hello\r")


def _request_as(api: AggregatedVirtApi, apiserver: ApiServer, method: str, path: str, user: str) -> None:
    """One request as the cluster admin impersonating ``user``; failures raise as the client's do."""
    context = ssl.create_default_context(cafile=str(api.pki_dir / "ca.crt"))
    context.load_cert_chain(str(api.pki_dir / "admin.crt"), str(api.pki_dir / "admin.key"))
    pool = urllib3.PoolManager(ssl_context=context, retries=False)
    response = pool.request(method, apiserver.url + path, headers={"Impersonate-User": user})
    if not 200 <= response.status < 300:
        raise error_from_response(response.status, response.data)


# Straight to virt-api, as the aggregator would call it (or as an attacker would without it).


def _direct(
    api: AggregatedVirtApi, method: str, path: str, headers: dict[str, str], *, client_cert: bool
) -> urllib3.BaseHTTPResponse:
    context = ssl.create_default_context(cafile=str(api.ca_file))
    context.check_hostname = False
    if client_cert:
        context.load_cert_chain(
            str(api.pki_dir / "front-proxy-client.crt"), str(api.pki_dir / "front-proxy-client.key")
        )
    pool = urllib3.PoolManager(ssl_context=context, retries=False)
    return pool.request(method, f"https://127.0.0.1:{api.port}{path}", headers=headers)


def test_requests_without_the_front_proxy_certificate_are_unauthenticated(
    aggregated_virt_api: AggregatedVirtApi,
) -> None:
    path = f"{BASE}/namespaces/default/virtualmachines/vm/start"
    answer = _direct(aggregated_virt_api, "PUT", path, {"X-Remote-User": "admin"}, client_cert=False)
    assert (answer.status, answer.data) == (401, b"request is not authenticated")
    open_path = _direct(aggregated_virt_api, "GET", BASE, {}, client_cert=False)
    assert open_path.status == 200


def test_direct_requests_are_reviewed(aggregated_virt_api: AggregatedVirtApi, namespace: str) -> None:
    path = f"{BASE}/namespaces/{namespace}/virtualmachines/vm/start"
    no_groups = _direct(aggregated_virt_api, "PUT", path, {"X-Remote-User": "mallory"}, client_cert=True)
    assert (no_groups.status, no_groups.data) == (401, b"a valid group header is required for authorization")
    headers = {"X-Remote-User": "mallory", "X-Remote-Group": "system:authenticated"}
    denied = _direct(aggregated_virt_api, "PUT", path, headers, client_cert=True)
    assert denied.status == 401
    unknown = _direct(aggregated_virt_api, "GET", "/metrics-or-anything", headers, client_cert=True)
    assert (unknown.status, unknown.data) == (401, b"unknown api endpoint: /metrics-or-anything")
    admin = {"X-Remote-User": "root", "X-Remote-Group": "system:masters"}
    missing = _direct(aggregated_virt_api, "PUT", path, admin, client_cert=True)
    assert missing.status == 404
    assert json.loads(missing.data)["message"] == 'virtualmachine.kubevirt.io "vm" not found'


@pytest.mark.parametrize(
    ("method", "resource", "subresource", "message"),
    [
        (
            "PUT",
            "virtualmachines",
            "addvolume",
            "Enable DeclarativeHotplugVolumes or HotplugVolumes feature gate to use this API.",
        ),
        (
            "PUT",
            "virtualmachines",
            "memorydump",
            "Enable DeclarativeHotplugVolumes or HotplugVolumes feature gate to use this API.",
        ),
        (
            "GET",
            "virtualmachineinstances",
            "objectgraph",
            "ObjectGraph feature gate not enabled: Unable to return object graph.",
        ),
        (
            "GET",
            "virtualmachineinstances",
            "sev/fetchcertchain",
            "'WorkloadEncryptionSEV' feature gate is not enabled",
        ),
    ],
)
def test_features_behind_gates_answer_as_with_the_gate_off(
    aggregated_virt_api: AggregatedVirtApi,
    kube: KubeClient,
    method: str,
    resource: str,
    subresource: str,
    message: str,
) -> None:
    with pytest.raises(ApiError) as refused:
        kube.request(method, f"{BASE}/namespaces/default/{resource}/vm/{subresource}")
    assert (refused.value.status, refused.value.reason, refused.value.message) == (400, "BadRequest", message)


def test_health_under_the_group_version(aggregated_virt_api: AggregatedVirtApi, kube: KubeClient) -> None:
    health = json.loads(kube.request("GET", f"{BASE}/healthz"))
    assert health["apiserver"]["connectivity"] == "ok"


def test_pause_and_unpause_reach_virt_handler(
    aggregated_virt_api: AggregatedVirtApi, kube: KubeClient, namespace: str
) -> None:
    create_vmi(kube, namespace, "vmi", {"phase": "Running", "nodeName": "node01"})
    base = f"{BASE}/namespaces/{namespace}/virtualmachineinstances/vmi"
    handler = aggregated_virt_api.handler
    before = len(handler.calls)
    kube.request("PUT", f"{base}/pause", body={"dryRun": ["All"]})
    assert len(handler.calls) == before  # checked, not forwarded
    kube.request("PUT", f"{base}/pause")
    assert handler.calls[-1] == ("PUT", f"/v1/namespaces/{namespace}/virtualmachineinstances/vmi/pause")
    with pytest.raises(ApiError) as not_paused:
        kube.request("PUT", f"{base}/unpause")
    assert not_paused.value.message.endswith('"vmi": VMI is not paused')
    handler.answer = (500, b"domain is gone")
    try:
        with pytest.raises(ApiError) as failed:
            kube.request("PUT", f"{base}/freeze")
    finally:
        handler.answer = (202, b"")
    assert failed.value.status == 500
    assert failed.value.message == (
        "Internal error occurred: unexpected return code 500 (500 Internal Server Error), "
        "message: domain is gone"
    )


def test_the_api_servers_openapi_merges_ours(
    aggregated_virt_api: AggregatedVirtApi, kube: KubeClient
) -> None:
    """The aggregator converts and merges virt-api's document (and survives doing so)."""
    wanted = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/start"
    deadline = time.monotonic() + 30
    while wanted not in json.loads(kube.request("GET", "/openapi/v2", timeout=60))["paths"]:
        assert time.monotonic() < deadline, "virt-api's paths never reached the API server's OpenAPI"
        time.sleep(0.5)
    # The OpenAPI v3 document of the group is published on its own schedule, after v2's.
    while True:
        try:
            v3 = json.loads(kube.request("GET", "/openapi/v3/apis/subresources.kubevirt.io/v1"))
        except NotFoundError:
            v3 = {"paths": {}}
        if wanted in v3["paths"]:
            break
        assert time.monotonic() < deadline + 30, "virt-api's paths never reached the API server's OpenAPI v3"
        time.sleep(0.5)


def _websocket(
    api: AggregatedVirtApi, apiserver: ApiServer, path: str, user: str | None = None
) -> tuple[int, bytes | str]:
    """A websocket to ``path`` through the API server, as KubeVirt's virtctl opens one (as ``user``
    when given: the cluster admin impersonates)."""

    async def exchange() -> tuple[int, bytes | str]:
        context = ssl.create_default_context(cafile=str(api.pki_dir / "ca.crt"))
        context.load_cert_chain(str(api.pki_dir / "admin.crt"), str(api.pki_dir / "admin.key"))
        async with aiohttp.ClientSession() as session:
            try:
                socket = await session.ws_connect(
                    apiserver.url.replace("https", "wss") + path,
                    protocols=("plain.kubevirt.io",),
                    ssl=context,
                    headers={"Impersonate-User": user} if user else None,
                )
            except aiohttp.WSServerHandshakeError as err:
                return err.status, ""
            assert socket.protocol == "plain.kubevirt.io"
            await socket.send_bytes(b"hello\r")
            echoed = await socket.receive(timeout=10)
            await socket.close()
            return 101, echoed.data

    return asyncio.run(exchange())


def test_console_and_vnc_are_relayed_to_virt_handler(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vmi(kube, namespace, "vmi", {"phase": "Running", "nodeName": "node01"})
    base = f"{BASE}/namespaces/{namespace}/virtualmachineinstances/vmi"
    assert _websocket(aggregated_virt_api, apiserver, f"{base}/console") == (101, b"hello\r")
    handler_path = f"/v1/namespaces/{namespace}/virtualmachineinstances/vmi"
    assert aggregated_virt_api.handler.calls[-1] == ("GET", f"{handler_path}/console")
    assert _websocket(aggregated_virt_api, apiserver, f"{base}/vnc?preserveSession=true") == (101, b"hello\r")
    assert aggregated_virt_api.handler.calls[-1] == ("GET", f"{handler_path}/vnc?preserveSession=true")


def test_console_refusals_are_status_answers(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vmi(
        kube, namespace, "off", {"phase": "Running"}, domain={"devices": {"autoattachSerialConsole": False}}
    )
    create_vmi(kube, namespace, "failed", {"phase": "Failed"})
    create_vmi(kube, namespace, "pending", {"phase": "Pending"})
    base = f"{BASE}/namespaces/{namespace}/virtualmachineinstances"
    for name, code, message in (
        ("off", 400, "No serial consoles are present."),
        (
            "failed",
            409,
            'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "failed": '
            "VMI is in failed status",
        ),
        ("pending", 400, "VMI is not running"),
    ):
        with pytest.raises(ApiError) as refused:
            kube.request("GET", f"{base}/{name}/console")
        assert (refused.value.status, refused.value.message) == (code, message)
    with pytest.raises(ApiError) as no_graphics:
        kube.request("GET", f"{base}/pending/vnc")
    assert (no_graphics.value.status, no_graphics.value.message) == (400, "VMI is not running")
    with pytest.raises(ApiError) as no_screen:
        kube.request("GET", f"{base}/pending/vnc/screenshot", query={"moveCursor": "false"})
    assert (no_screen.value.status, no_screen.value.message) == (400, "VMI is not running")


def test_a_preserved_vnc_session_refuses_a_second_viewer(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vmi(kube, namespace, "vmi", {"phase": "Running", "nodeName": "node01"})
    url = (
        apiserver.url.replace("https", "wss")
        + f"{BASE}/namespaces/{namespace}/virtualmachineinstances/vmi/vnc"
    )
    pki = aggregated_virt_api.pki_dir

    async def second_viewer() -> tuple[int, str]:
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        async with aiohttp.ClientSession() as session:
            first = await session.ws_connect(url, protocols=("plain.kubevirt.io",), ssl=context)
            try:
                await session.ws_connect(
                    url + "?preserveSession=true", protocols=("plain.kubevirt.io",), ssl=context
                )
            except aiohttp.WSServerHandshakeError as refused:
                async with session.get(url + "?preserveSession=true", ssl=context) as plain:
                    return refused.status, (await plain.json())["message"]
            finally:
                await first.close()
            return 101, ""

    status, message = asyncio.run(second_viewer())
    assert (status, message) == (
        500,
        "Internal error occurred: Can't connect to websocket (503): websocket: bad handshake",
    )


def test_launcher_state_is_reviewed_as_its_own_subresource_and_read_from_the_handler(
    aggregated_virt_api: AggregatedVirtApi, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    create_vmi(kube, namespace, "vmi", {"phase": "Running", "nodeName": "node01"})
    path = f"{BASE}/namespaces/{namespace}/virtualmachineinstances/vmi/launcherstate"
    handler = aggregated_virt_api.handler
    state = {
        "socket": {"state": "Ready", "message": ""},
        "domain": {"exists": False},
        "lastDomainEvent": None,
    }
    handler.answer = (200, json.dumps(state).encode())
    try:
        viewer = {"apiGroups": ["subresources.kubevirt.io"], "resources": ["virtualmachineinstances/console"]}
        kube.create(
            ROLES, namespace, {"metadata": {"name": "viewer"}, "rules": [{**viewer, "verbs": ["get"]}]}
        )
        kube.create(
            ROLE_BINDINGS,
            namespace,
            {
                "metadata": {"name": "bob-views"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "viewer"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}],
            },
        )
        with pytest.raises(ApiError) as denied:
            _request_as(aggregated_virt_api, apiserver, "GET", path, "bob")  # console is not launcherstate
        assert denied.value.status == 403
        viewer["resources"] = ["virtualmachineinstances/launcherstate"]
        kube.create(
            ROLES, namespace, {"metadata": {"name": "diagnoser"}, "rules": [{**viewer, "verbs": ["get"]}]}
        )
        kube.create(
            ROLE_BINDINGS,
            namespace,
            {
                "metadata": {"name": "bob-diagnoses"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "diagnoser"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}],
            },
        )
        _request_as(aggregated_virt_api, apiserver, "GET", path, "bob")
        assert json.loads(kube.request("GET", path)) == state
    finally:
        handler.answer = (202, b"")
    assert handler.calls[-1] == (
        "GET",
        f"/v1/namespaces/{namespace}/virtualmachineinstances/vmi/launcherstate",
    )
