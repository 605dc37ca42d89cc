"""rnn family rules (being written)."""

RULES = []
