"""storebench: how storage systems and data layouts feed deep-learning training."""
