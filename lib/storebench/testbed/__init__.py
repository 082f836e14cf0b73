"""What sits around a client and a server on one machine: where data lives (tmpfs, disk, cold cache), network namespaces and profiles, byte counting, memory limits, CPU/RSS sampling."""
