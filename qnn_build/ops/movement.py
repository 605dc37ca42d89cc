"""movement family rules (being written)."""

RULES = []
