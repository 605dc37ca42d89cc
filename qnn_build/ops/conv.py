"""conv family rules (being written)."""

RULES = []
