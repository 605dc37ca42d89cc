"""profile.json (docs/formats.md): what `net-run --profiling-level basic|detailed` writes.

basic: the init timings and each inference's execute time, with summary statistics. detailed: also
every node with its times, as the backend's session gives them (Session.profile_nodes: our runtime's
schedule with each node's time in each inference; the htp's QNN events). The native runner
(runner/main.cpp) writes the same keys.
"""

from .stats import stats

FORMAT_VERSION = 1
LEVELS = ("basic", "detailed")


class Recorder:
    """Collects one net-run's profile: call start() before the inferences, record() after each."""

    def __init__(self, model, level: str | None):
        """model: a loaded Session of any backend (backends/contract.py)."""
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
        if self.level == "detailed":
            profile["nodes"] = model.profile_nodes(self.node_us)
        return profile
