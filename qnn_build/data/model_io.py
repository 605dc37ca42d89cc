"""What a loaded model says about itself, on every backend: its inputs and outputs (IOInfo) and the
nodes of its schedule that a detailed profile times (NodeInfo). Input lists and raw files are checked
against IOInfo; profile.json is written from NodeInfo (runtime/profile.py)."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class IOInfo:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]


@dataclass(frozen=True)
class NodeInfo:
    """One node of a finalized schedule (what a detailed profile times)."""
    name: str
    op: str
    fused: str  # the activation fused into it at finalize ("" when none)
    outputs: tuple[tuple[int, ...], ...]  # output shapes; () for an absent optional output
