"""Pool workers run one compute thread each: the pool is the parallelism."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, os
import numpy, scipy.optimize  # BLAS loaded before the worker starts, as in a build worker
from threadpoolctl import threadpool_info
from {module} import {function}
{function}()
print(json.dumps({{"pools": [p["num_threads"] for p in threadpool_info()],
                  "env": os.environ.get("OMP_NUM_THREADS")}}))
"""


def _threads_after(module: str, function: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", PROBE.format(module=module, function=function)],
                          capture_output=True, text=True, env=env, check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_build_worker_limits_every_loaded_thread_pool_to_one():
    found = _threads_after("vrforge.builds.worker", "init_worker")
    assert found["pools"] and set(found["pools"]) == {1}
    assert found["env"] == "1"  # for libraries a worker loads later (torch)


def test_an_audit_worker_limits_every_loaded_thread_pool_to_one():
    found = _threads_after("vrforge.builds.audit", "_init_worker")
    assert found["pools"] and set(found["pools"]) == {1}
