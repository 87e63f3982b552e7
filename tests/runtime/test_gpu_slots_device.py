"""The GPU slot allocator on a real host with two or more GPUs (skips elsewhere)."""

import os
import subprocess
import sys
import time

import pytest

from genotile.runtime.gpu_slots import ENV, host_gpu_count

N_GPUS = 0 if os.environ.get(ENV) else host_gpu_count()
pytestmark = pytest.mark.skipif(N_GPUS < 2, reason=f"needs 2+ GPUs visible to nvidia-smi (found {N_GPUS})")

JOB = """
import json, sys, time
sys.path.insert(0, {src!r})
from genotile.runtime.gpu_slots import gpu_slot
with gpu_slot(lock_dir={locks!r}, poll=0.05) as slot:
    import cupy
    start = time.time()
    props = cupy.cuda.runtime.getDeviceProperties(0)
    bus = props["uuid"].hex() if isinstance(props.get("uuid"), bytes) else str(props.get("uuid"))
    a = cupy.ones((4096, 4096), dtype=cupy.float32)
    while time.time() - start < 1.5:
        a = a @ a / 4096
    cupy.cuda.Device().synchronize()
    print(json.dumps({{"slot": slot, "bus": bus, "start": start, "end": time.time()}}))
"""


def test_concurrent_jobs_run_on_distinct_physical_gpus(tmp_path):
    import json

    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    code = JOB.format(src=os.path.abspath(src), locks=str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k != ENV}
    jobs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(N_GPUS + 1)
    ]
    t0 = time.time()
    results = [json.loads(p.communicate(timeout=120)[0]) for p in jobs]
    assert all(p.returncode == 0 for p in jobs)
    # jobs that overlapped in time ran on different physical devices (told apart by UUID)
    for a in results:
        for b in results:
            if a is not b and a["start"] < b["end"] and b["start"] < a["end"]:
                assert a["bus"] != b["bus"] and a["slot"] != b["slot"], (a, b)
    assert len({r["bus"] for r in results}) == N_GPUS  # every GPU was used
    assert time.time() - t0 > 3.0  # N + 1 jobs on N GPUs: one had to wait for a slot
