"""Paper: Versaci & Busonera, "Scaling deep learning data management with Cassandra DB" (seed 004): the prefetching Cassandra loader, a growing ring, data-parallel ranks."""
