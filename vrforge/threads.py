"""One compute thread in each pool worker.

The build and the audit run one process per core. Left alone, OpenBLAS (numpy and scipy: the
graph layouts' L-BFGS-B) and OpenMP start a thread per core in every one of those processes, and
with no core to spare the threads spin-wait on each other: a ``graph_isomorphism`` expert puzzle
took 4-11 CPU s to build instead of 0.6-1.7 s beside other work on two cores. The results do not
change (the same bytes with one thread as with the default).
"""

from __future__ import annotations

import os

from threadpoolctl import threadpool_limits

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_thread_per_process() -> None:
    """Limit the thread pools already loaded to one thread, and those loaded later (torch) too."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    threadpool_limits(1)
