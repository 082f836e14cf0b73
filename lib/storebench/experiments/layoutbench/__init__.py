"""Paper: Sanyal, Chen, Tumanov & Kimball, "LayoutBench: Performance Benchmarking of Cloud Storage Layouts for Multimedia Data" (seed 002): image layouts on S3."""
