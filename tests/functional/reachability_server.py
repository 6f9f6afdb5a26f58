"""A stand-in for virt-api in a pod: HTTPS on 8443 answering what the cluster sends virt-api.

- ``GET /healthz``: ``ok``.
- ``POST /validate``: an AdmissionReview answer that denies objects labelled ``reachability/deny``.
- ``GET /apis/subresources.kubevirt.io/v1``: API discovery, so the APIService becomes Available.
- ``GET /apis/subresources.kubevirt.io/v1/whoami``: the user the aggregator forwarded (front proxy headers).

Runs with the standard library only; the certificate and key come from /etc/reachability.
"""

from __future__ import annotations

import json
import ssl
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DISCOVERY = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "subresources.kubevirt.io/v1",
    "resources": [{"name": "whoami", "namespaced": False, "kind": "WhoAmI", "verbs": ["get"]}],
}


class Handler(BaseHTTPRequestHandler):
    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._reply(200, b"ok")
        elif self.path.rstrip("/") == "/apis/subresources.kubevirt.io/v1":
            self._reply(200, DISCOVERY)
        elif self.path.startswith("/apis/subresources.kubevirt.io/v1/whoami"):
            user = self.headers.get("X-Remote-User", "")
            self._reply(200, {"kind": "WhoAmI", "apiVersion": "subresources.kubevirt.io/v1", "user": user})
        else:
            self._reply(404, {"path": self.path})

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        request = review["request"]
        labels = request["object"].get("metadata", {}).get("labels", {})
        allowed = "reachability/deny" not in labels
        response = {"uid": request["uid"], "allowed": allowed}
        if not allowed:
            response["status"] = {"code": 422, "message": "denied by the reachability webhook"}
        self._reply(
            200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )


def main() -> None:
    server = ThreadingHTTPServer(("0.0.0.0", 8443), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain("/etc/reachability/tls.crt", "/etc/reachability/tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
