"""The DVC pipeline: stage dependencies derived from imports, and the papermill runner."""
