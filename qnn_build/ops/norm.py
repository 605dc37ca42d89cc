"""norm family rules (being written)."""

RULES = []
