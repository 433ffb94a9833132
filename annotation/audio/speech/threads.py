"""Every speech model runs on one thread: the take analysis job shares its machine with others.

A take's models run one after another and each is far faster than real time on one core, so a
second thread only adds CPU: onnxruntime's default pool (one thread per core) spin-waits between
operators, torch's pool and the BLAS library's (numpy's matrix products in librosa's features)
do the same. Measured on the busy 2-core machine (bench/speech_models.py): Resemblyzer on a
minute spent 0.024-0.049 x real time in CPU with torch's two threads, 0.0065 with one; DNSMOS's
P.835 model 0.032 with onnxruntime's default pool, 0.025 with one thread; the whole check of a
7.9 s take 0.088-0.097 with two BLAS threads, 0.064 with one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def one_thread_session(model: Path) -> Any:
    """Return an onnxruntime session of the ONNX file `model` on one thread that never spin-waits."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])


@contextmanager
def one_thread() -> Iterator[None]:
    """Run the block with the BLAS library, OpenMP and torch (when loaded) on one thread each,
    then give them back the threads they had.

    The counts are the process's, so they are set around each model call rather than once: a
    worker that also trains (ml.jobs) keeps its own setting."""
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")  # only the speaker model needs torch; never import it here
    previous = torch.get_num_threads() if torch else None
    with threadpool_limits(limits=1):
        if torch:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if torch and previous:
                torch.set_num_threads(previous)
