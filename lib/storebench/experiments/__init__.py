"""One module per experiment: the code a notebook calls to measure and summarise."""
