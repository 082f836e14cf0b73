"""Paper: Cheng & Gunawi, "Storage Benchmarking with Deep Learning Workloads" (seeds 000/003): location, access pattern, format, granularity, time breakdown, training."""
