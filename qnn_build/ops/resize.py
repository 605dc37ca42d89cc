"""resize family rules (being written)."""

RULES = []
