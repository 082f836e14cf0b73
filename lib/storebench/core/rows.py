"""The columns of a result row (one measured repeat): names only, shared by measuring and analysing.
``repeats``, ``ci_target_met`` and ``passes`` describe the row's cell (storebench.core.repeats)."""

ROW_COLUMNS = [
    "experiment", "system", "dataset", "format", "samples_per_object", "samples_per_request", "access",
    "location", "network", "repeat", "repeats", "ci_target_met", "passes", "n_samples", "n_requests", "bytes", "needed_bytes", "seconds", "decode_seconds",
    "wall_seconds", "client_cpu_seconds", "client_cpu_ms_per_object", "client_peak_rss_bytes", "resident_fraction",
    "cold_method", "server_restart_seconds", "verified", "system_version", "client_version", "client_config",
    "host", "cpus", "memory_bytes", "python", "git_rev", "params_hash",
    "run_id", "scale", "load_avg_1m", "net_profile", "net_rtt_ms", "net_throughput_mbit",
]
# ``net_*``: the network profile (storebench.testbed.netprofiles) between client and server, with the RTT
# and throughput measured on it before use; empty where the client reached the server directly.
NET_COLUMNS = ("net_profile", "net_rtt_ms", "net_throughput_mbit")
KEY_COLUMNS = ["experiment", "system", "dataset", "format", "samples_per_object", "samples_per_request",
               "access", "location", "network"]
# ``network``: where the client sits. LOCAL_NETWORK is every experiment's default (embedded
# store, or a server on this machine's loopback); the breakdown experiment adds a client in the
# server's own network namespace and one across a veth pair (storebench.testbed.netns).
LOCAL_NETWORK = "local"
