"""Keep a Serve replica's own port on loopback when the app is served on loopback.

Every Serve replica starts a gRPC server for calls between deployments and binds it to
`[::]:0`: every interface, whatever address the HTTP proxy was given, and Serve has no option
for it. Those calls go over gRPC only when `RAY_SERVE_USE_GRPC_BY_DEFAULT` or
`RAY_SERVE_PROXY_USE_GRPC` is set (then a caller dials the replica's node IP, so the port must
stay where Serve put it); otherwise they are Ray actor calls and the port is never dialled. So
when the proxy listens on a loopback address and neither is set, each replica's deployment
constructor calls `keep_replica_port_on_loopback()`, which makes the replica bind that server
to 127.0.0.1 instead: Serve adds the port after the constructor returns, through the module
function replaced here.

Ray's own processes (GCS, raylet, workers, agents) also listen beyond loopback and have no
option to do otherwise; they are guarded by Ray's cluster token (on by default since 2.60).
"""

from __future__ import annotations

import logging

from actors.serve_run import is_loopback

logger = logging.getLogger(__name__)

ALL_INTERFACES_ANY_PORT = "[::]:0"
LOOPBACK_ANY_PORT = "127.0.0.1:0"


def keep_replica_port_on_loopback() -> bool:
    """In a replica's constructor: bind its inter-deployment gRPC port to loopback when the
    app is served on loopback and no caller uses that port. True when it will be."""
    from ray.serve._private import constants
    from ray.serve._private import replica as serve_replica

    if constants.RAY_SERVE_USE_GRPC_BY_DEFAULT or constants.RAY_SERVE_PROXY_USE_GRPC:
        return False
    host = _proxy_host()
    if host is None or not is_loopback(host):
        return False
    add_port = serve_replica.add_port_to_grpc_server
    if getattr(add_port, "keeps_loopback", False):
        return True

    def add_port_on_loopback(server, address: str) -> int:
        if address == ALL_INTERFACES_ANY_PORT:
            address = LOOPBACK_ANY_PORT
        return add_port(server, address)

    add_port_on_loopback.keeps_loopback = True  # type: ignore[attr-defined]
    serve_replica.add_port_to_grpc_server = add_port_on_loopback
    return True


def _proxy_host() -> str | None:
    """The address Serve's HTTP proxy was started on (None when it cannot be asked)."""
    import ray
    from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

    try:
        controller = ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
        return ray.get(controller.get_http_config.remote(), timeout=30).host
    except Exception as exc:  # a replica must start even when the controller cannot say
        logger.warning("could not read Serve's HTTP address (%s); replica port left as is", exc)
        return None
