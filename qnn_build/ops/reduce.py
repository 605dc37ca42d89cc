"""reduce family rules (being written)."""

RULES = []
