"""pool family rules (being written)."""

RULES = []
