"""matmul family rules (being written)."""

RULES = []
