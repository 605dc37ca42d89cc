"""`scons --shard K/N`: a deterministic 1/N of the zoo, for a CI matrix of N jobs.

The unit is a (model, precision) with all its slots: the slots of one precision share its
conversion and model library, so giving them to one job converts and compiles each only once across
the matrix. The units are sorted by (model, precision) and dealt round-robin: job K gets the ones at
positions K-1, K-1+N, ...; the same zoo on any machine gives the same split, and the N shards
together are the whole zoo. Each shard's artifacts go into the shared cache (--cache-dir), from
which `scons --cache-dir DIR release` then assembles the release without rebuilding.
"""

from ..errors import QnnBuildError
from . import progress, zoo


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N) with 1 <= K <= N."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise QnnBuildError(f"--shard {text}: expected K/N, like 1/4") from None
    if not 1 <= k <= n:
        raise QnnBuildError(f"--shard {text}: K must be between 1 and N")
    return k, n


def shard_units(rows: list[dict]) -> list[tuple[str, str]]:
    """Every (model, precision) that builds something (more than its model's alias), sorted."""
    return sorted({(row["model"], row["precision"]) for row in rows if len(row["nodes"]) > 1})


def shard_targets(env, text: str) -> list:
    """env.QnnShard('K/N'): the build targets (libraries, context binaries, tests) of shard K of N,
    of the models declared so far: a good Default()."""
    try:
        k, n = parse_shard(text)
    except QnnBuildError as e:
        zoo.stop(e)
    mine = set(shard_units(progress.ROWS)[k - 1::n])
    targets = []
    for row in progress.ROWS:
        if (row["model"], row["precision"]) in mine:
            targets += [node for node in row["nodes"][1:] if node not in targets]  # nodes[0]: the model alias
    return targets
