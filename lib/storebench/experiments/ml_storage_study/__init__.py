"""Paper: Britto, Patel & Mukherjee, "Studying Storage Systems for ML Workloads" (seed 001): dataloaders, scalability, embeddings, resource use."""
