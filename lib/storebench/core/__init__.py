"""The measurement core: typed settings from params.yaml, the experiment contract, timing, result tables and their provenance."""
