"""A training run's resumable state: what ``ml.core.loop.run_steps`` saves and restores to resume a run.

One file (``ml.core.loop.RESUME_STATE_FILE``) in the run's folder holds, after a finished step:

- the trainable weights (the LoRA adapter, or every weight of a fully trained model), by name;
- the optimizer's state (AdamW moments, and each group's learning rate: the loops set the rate
  from the step number, so there is no separate scheduler to keep);
- the steps done and their metrics; the example order is not stored, ``run_steps`` replays it
  from the seed;
- the Python, NumPy and torch (CPU and CUDA) RNG states, so dropout and RL's sampling draw what
  an uninterrupted run would draw;
- whatever else the loop keeps between steps (``extra``: SFT's AAA target).

It is written to a temporary file and renamed, so a worker dying mid-save leaves the previous state.
Restored on the same device and dtype, a resumed run ends with the parameters of an uninterrupted
one (equal on CPU). No Django here: the job layer only picks the folder (``ml.jobs.training.register``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ml.core.loop import ResumeSpec

# () -> what the loop keeps between steps; (that, as saved) -> None, put back before the next step.
ExportExtra = Callable[[], dict[str, Any]]
ImportExtra = Callable[[dict[str, Any]], None]


def rng_states() -> dict[str, Any]:
    """Return the Python, NumPy and torch RNG states."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_states(states: dict[str, Any]) -> None:
    """Put back RNG states returned by ``rng_states``."""
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if states["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


class TrainingState:
    """The ``ml.core.loop.Resumable`` of a torch loop: one module's trainable weights and its optimizer."""

    def __init__(
        self,
        spec: ResumeSpec,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        export_extra: ExportExtra | None = None,
        import_extra: ImportExtra | None = None,
    ) -> None:
        self.spec = spec
        self.module = module
        self.optimizer = optimizer
        self.export_extra = export_extra
        self.import_extra = import_extra

    @property
    def every_steps(self) -> int:
        """Return how many steps pass between two saves."""
        return self.spec.every_steps

    def save(self, steps_done: int, history: list[dict[str, float]]) -> None:
        """Write the state after ``steps_done`` steps, replacing the previous one in one rename."""
        state = {
            "steps_done": steps_done,
            "history": [dict(metrics) for metrics in history],
            "weights": {
                name: parameter.detach().clone()
                for name, parameter in self.module.named_parameters()
                if parameter.requires_grad
            },
            "optimizer": self.optimizer.state_dict(),
            "rng": rng_states(),
            "extra": self.export_extra() if self.export_extra is not None else {},
        }
        self.spec.directory.mkdir(parents=True, exist_ok=True)
        target = self.spec.state_file()
        partial = target.with_name(target.name + ".partial")
        torch.save(state, partial)
        os.replace(partial, target)

    def restore(self) -> tuple[int, list[dict[str, float]]] | None:
        """Load the saved state into the module, optimizer and RNGs; return (steps done, their metrics)."""
        path = self.spec.state_file()
        if not path.is_file():
            return None
        # Not weights_only: the RNG states are Python and NumPy objects. The file is this job's
        # own, written by an earlier attempt of it into the job's folder.
        state = torch.load(path, map_location="cpu", weights_only=False)
        parameters = dict(self.module.named_parameters())
        missing = sorted(set(state["weights"]) - set(parameters))
        if missing:
            raise ValueError(f"{path} holds weights the model does not have: {missing[:5]}")
        with torch.no_grad():
            for name, saved in state["weights"].items():
                parameters[name].copy_(saved)
        self.optimizer.load_state_dict(state["optimizer"])
        set_rng_states(state["rng"])
        if self.import_extra is not None:
            self.import_extra(state["extra"])
        return int(state["steps_done"]), [dict(metrics) for metrics in state["history"]]


def training_state(
    spec: ResumeSpec | None,
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    export_extra: ExportExtra | None = None,
    import_extra: ImportExtra | None = None,
) -> TrainingState | None:
    """Return the run's resumable state when it has a folder to keep it in (None: it does not resume)."""
    if spec is None:
        return None
    return TrainingState(spec, module, optimizer, export_extra, import_extra)
