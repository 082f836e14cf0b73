"""The harness itself: how close storebench's clients come to each system's own ceiling."""
