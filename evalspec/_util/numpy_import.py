"""Import numpy with its BLAS on one thread, unless the environment already chose a number.

numpy's OpenBLAS starts a thread per core as it is imported, and the threads spin waiting for
work: on 2 cores ~50 ms of CPU during the import and as much again after it, taken from the
model server or the run beside it. What evalspec asks of numpy (products of single embedding
vectors, stacking rows) never uses them, and the embedding model runs in torch, whose threads
are its own. The variable is set for the import alone, so processes started later (tool
servers, the model) do not inherit it. numpy imported earlier by the caller is left as it is.

numpy and scipy, as they are imported, add warnings filters for the whole process (scipy.sparse
hides numpy's matrix warning everywhere): both are imported with the caller's filters put back
afterwards (`import_scipy` for the parts of scipy evalspec uses).
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import ModuleType

BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def import_numpy() -> ModuleType:
    """The numpy module; imported with one BLAS thread when this process imports it first."""
    if "numpy" in sys.modules:
        return sys.modules["numpy"]
    chosen = BLAS_THREADS in os.environ
    if not chosen:
        os.environ[BLAS_THREADS] = "1"
    try:
        with warnings.catch_warnings():  # numpy adds filters for the whole process as it loads
            import numpy
    finally:
        if not chosen:
            os.environ.pop(BLAS_THREADS, None)
    return numpy


def import_scipy(*modules: str) -> None:
    """Import these scipy modules (``"scipy.stats"``), leaving the warnings filters as the
    caller had them; later ``from scipy.stats import ...`` finds them imported."""
    missing = [m for m in modules if m not in sys.modules]
    if not missing:
        return
    import_numpy()
    with warnings.catch_warnings():
        for module in missing:
            importlib.import_module(module)
