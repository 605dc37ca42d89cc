"""profile.json (docs/formats.md): what `net-run --profiling-level basic|detailed` writes.

basic: the init timings and each inference's execute time, with summary statistics. detailed: also
every node of the finalized schedule (name, op type, output shapes) with its time in each inference
and its statistics. The native runner (runner/main.cpp) writes the same keys.
"""

import math

from .binding import Model

FORMAT_VERSION = 1
LEVELS = ("basic", "detailed")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the closest ranks, as numpy's
    default; the native runner computes it the same way."""
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def stats(values: list[float]) -> dict[str, float]:
    """mean, p50, p90, min, max in microseconds (3 decimals, nanoseconds)."""
    if not values:
        return {}
    out = {"mean": sum(values) / len(values), "p50": percentile(values, 50), "p90": percentile(values, 90),
           "min": min(values), "max": max(values)}
    return {k: round(v, 3) for k, v in out.items()}


class Recorder:
    """Collects one net-run's profile: call start() before the inferences, record() after each."""

    def __init__(self, model: Model, level: str | None):
        self.model, self.level = model, level
        self.execute_us: list[float] = []
        self.node_us: list[list[float]] = []  # per inference, per node

    def start(self) -> None:
        self.model.set_profiling(self.level or "off")

    def record(self, execute_us: float) -> None:
        self.execute_us.append(execute_us)
        if self.level == "detailed":
            self.node_us.append(self.model.node_times_us().tolist())

    def profile(self) -> dict:
        model = self.model
        profile = {**{k: round(v, 1) for k, v in model.timings.items()},
                   "execute_us": [round(v, 1) for v in self.execute_us], "execute_stats": stats(self.execute_us),
                   "backend": model.backend, "num_inferences": len(self.execute_us),
                   "format_version": FORMAT_VERSION, "profiling_level": self.level or "off"}
        if self.level == "detailed" and hasattr(model, "profile_nodes"):  # a backend with its own events (htp)
            profile["nodes"] = model.profile_nodes()
        elif self.level == "detailed":
            nodes = []
            for i, info in enumerate(model.nodes()):
                times = [run[i] for run in self.node_us]
                node = {"name": info.name, "op": info.op, "outputs": [list(s) for s in info.outputs],
                        "time_us": [round(t, 3) for t in times], "stats": stats(times)}
                if info.fused:
                    node["fused"] = info.fused
                nodes.append(node)
            profile["nodes"] = nodes
        return profile
