"""QNN's profile (the CSV the QNN EP writes with profiling_level basic/detailed) into profile.json terms.

Each row: `Msg Timestamp, Message, Time, Unit of Measurement, Timing Source, Event Level, Event
Identifier`. Per inference QNN reports ROOT events ("QNN (execute) time" in us, "Accelerator
(execute) time (cycles)") and, at detailed, one NODE sub-event per op of the prepared graph
("conv0_token_1:OpId_25 (cycles)", also "Input OpId_2" and "Output OpId_3"): emulated HTP cycles.
"""

import csv
import re
from pathlib import Path

from ..runtime.stats import stats

_NODE = re.compile(r"^(.*?):?\s*OpId_\d+ \(cycles\)$")


def read_profile(path) -> dict:
    """{"nodes": [{"name", "cycles": [per inference], "stats"}], "events": {message: [values]}}."""
    nodes: dict[str, list[float]] = {}
    events: dict[str, list[float]] = {}
    with open(Path(path), newline="") as f:
        for row in csv.DictReader(f):
            ident, value = row.get("Event Identifier", ""), row.get("Time", "")
            try:
                number = float(value)
            except ValueError:
                continue
            match = _NODE.match(ident)
            if row.get("Message") == "NODE" and match:
                nodes.setdefault(match.group(1).strip(), []).append(number)  # QNN's node: ours + `_token_N`
            else:
                unit = row.get("Unit of Measurement", "")
                events.setdefault(f"{ident} [{unit}]", []).append(number)
    return {"nodes": [{"name": name, "cycles": values, "stats": stats(values)} for name, values in nodes.items()],
            "events": events}
