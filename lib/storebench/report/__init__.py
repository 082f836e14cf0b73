"""Rendering what experiments recorded: findings and claims, figures in one house style, report tables, the index."""
