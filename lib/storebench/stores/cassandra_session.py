"""A cassandra-driver session for an endpoint dict (storebench.services' or params.yaml's), with the
endpoint named in every connection error: what the Cassandra store, seed 004's model and its
loader connect through."""
from __future__ import annotations

from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import DCAwareRoundRobinPolicy

from storebench.stores.base import StoreConnectionError

def where(endpoint: dict) -> str:
    """'cassandra at 127.0.0.1:9042' (the contact points), for error messages."""
    return f"cassandra at {','.join(endpoint['contact_points'])}:{endpoint.get('port', 9042)}"


def connect(endpoint: dict, request_timeout: float = 60, row_factory=None, **cluster_options):
    """``(Cluster, Session)`` for an endpoint (storebench.services or params.yaml); a clear
    StoreConnectionError naming the endpoint when no node answers or the login fails.
    ``row_factory``: e.g. ``cassandra.query.tuple_factory`` (less client CPU per row than the
    default named tuples)."""
    auth = None
    if endpoint.get("username"):
        from cassandra.auth import PlainTextAuthProvider
        auth = PlainTextAuthProvider(endpoint["username"], endpoint["password"])
    profile = ExecutionProfile(request_timeout=request_timeout,
                               load_balancing_policy=DCAwareRoundRobinPolicy(endpoint.get("local_dc", "datacenter1")),
                               **({"row_factory": row_factory} if row_factory else {}))
    cluster = Cluster(endpoint["contact_points"], port=endpoint.get("port", 9042), auth_provider=auth,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, protocol_version=5, **cluster_options)
    try:
        return cluster, cluster.connect()
    except NoHostAvailable as error:
        cluster.shutdown()
        raise StoreConnectionError(f"{where(endpoint)}: cannot connect or log in ({error})") from None
