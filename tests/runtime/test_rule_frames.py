"""runtime/rule.skip_frame_imports: Snakemake's own process no longer imports pandas to look for
data frames among the jobs' params while none can be there; once pandas is imported, Snakemake's
own code runs. Checked in a fresh interpreter (the patch is of Snakemake's classes)."""

import subprocess
import sys

CHECK = r"""
import sys
import numpy as np
from snakemake import persistence
from snakemake.iocontainers import Params, Snakemake
from genotile.runtime.rule import skip_frame_imports

assert "pandas" not in sys.modules
skip_frame_imports()
skip_frame_imports()  # once is enough: a second call changes nothing
obj = object.__new__(Snakemake)
params = Params(fromdict={"a": np.arange(3), "b": "x", "c": 2})
obj._safely_store_params(params)
assert "pandas" not in sys.modules and "polars" not in sys.modules
assert obj._params_types == {0: "np.ndarray"} and list(obj._params_store) == [[0, 1, 2], "x", 2], obj._params_store
assert obj._params_store.b == "x"
base = next(c for c in vars(persistence).values() if isinstance(c, type) and "_serialize_param_pandas" in vars(c))
record = object.__new__(type("Record", (base,), dict.fromkeys(base.__abstractmethods__)))  # not initialised
assert record._serialize_param_pandas({"k": 1}) == repr({"k": 1})
assert "pandas" not in sys.modules
try:
    import pandas as pd
except ImportError:
    print("no pandas")
    raise SystemExit(0)
frame = pd.DataFrame({"x": [1, 2]})
obj._safely_store_params(Params(fromdict={"f": frame}))
assert obj._params_types == {0: "pd.DataFrame"}
assert record._serialize_param_pandas(frame) == repr(pd.util.hash_pandas_object(frame).tolist())
assert sys.modules["pandas"] is pd
print("ok")
"""


def test_no_pandas_import_while_no_frame_can_be_a_param():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() in ("ok", "no pandas")


RACE = r"""
import sys
import threading
import numpy as np
from snakemake import persistence
from snakemake.iocontainers import Params, Snakemake
from genotile.runtime.rule import skip_frame_imports

assert "pandas" not in sys.modules
skip_frame_imports()
base = next(c for c in vars(persistence).values() if isinstance(c, type) and "_serialize_param_pandas" in vars(c))
record = object.__new__(type("Record", (base,), dict.fromkeys(base.__abstractmethods__)))
errors, stop = [], threading.Event()

def store():  # script jobs' `snakemake` objects, made on the executor's threads
    while not stop.is_set():
        obj = object.__new__(Snakemake)
        obj._safely_store_params(Params(fromdict={"a": np.arange(3)}))

def other():  # the main thread's params records, and an import of pandas of its own
    try:
        for _ in range(2000):
            record._serialize_param_pandas({"k": 1})
        import pandas  # noqa: F401
    except Exception as e:
        errors.append(repr(e))
    finally:
        stop.set()

threads = [threading.Thread(target=store) for _ in range(2)] + [threading.Thread(target=other)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors or ("ok" if "pandas" in sys.modules else "no pandas"))
"""


def test_other_threads_import_the_frame_libraries_while_a_job_skips_them():
    """A thread recording params or importing pandas while another makes a job's `snakemake`
    object (which takes pandas as absent) is not refused it (helper-37's race: a None entry in
    sys.modules refused it to every thread, and the run failed)."""
    proc = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() in ("ok", "no pandas"), proc.stdout[-3000:]
