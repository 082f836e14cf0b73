"""Datasets and what is made of them: raw files, prepared arrays, samples, stored formats, row packings, key streams, workloads, splits."""
