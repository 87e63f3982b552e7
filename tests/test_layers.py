"""The package's floors: every import runs down them (tests/test_package_imports.py reads the graph).

From the ground up: `util` (atomic writes, checksums, progress, CPU counts), `core` (arrays only,
no file I/O), `io` (file formats and readers), `backends` (CPU and GPU kernels), `store` (the store
stage: ingest, plan, pack), the workloads `screen`, `pairs` and `triples` (each on the store, none
on another), then what runs them: `settings`, `pipeline`, `report` (and `report_table`), `api`, `cli` and `runtime` (the
Snakemake glue, imported only by rules/ and scripts/).
"""

from test_package_imports import import_graph

FLOORS = {
    "genotile.errors": 0,
    "genotile.version": 0,
    "genotile.util": 0,
    "genotile.core": 1,
    "genotile.io": 2,
    "genotile.backends": 3,
    "genotile.store": 4,
    "genotile.screen": 5,
    "genotile.pairs": 5,
    "genotile.triples": 5,
    "genotile.settings": 6,
    "genotile.pipeline": 7,
    "genotile.report": 7,
    "genotile.report_table": 7,
    "genotile.api": 8,
    "genotile.cli": 8,
    "genotile.runtime": 8,
    "genotile": 9,
}
WORKLOADS = ("genotile.screen", "genotile.pairs", "genotile.triples")


def home(module: str) -> str:
    """The longest FLOORS key that is `module` or a package above it."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        if name in FLOORS:
            return name
    raise AssertionError(f"{module} has no floor: add its package to FLOORS")


def test_every_module_has_a_floor():
    for module in import_graph():
        home(module)


def test_imports_run_down():
    climbs = [
        f"{a} -> {b}"
        for a, targets in sorted(import_graph().items())
        for b in sorted(targets)
        if FLOORS[home(b)] > FLOORS[home(a)]
    ]
    assert not climbs, "imports that run back up the floors: " + "; ".join(climbs)


def test_workloads_do_not_import_each_other():
    crossings = [
        f"{a} -> {b}"
        for a, targets in sorted(import_graph().items())
        for b in sorted(targets)
        if home(a) in WORKLOADS and home(b) in WORKLOADS and home(a) != home(b)
    ]
    assert not crossings, "a workload imports another's stage: " + "; ".join(crossings)


def test_core_does_no_file_io():
    """core/ holds array code: its modules import no genotile.io and no genotile.util file writer."""
    graph = import_graph()
    writers = {"genotile.util.atomic", "genotile.util.readback"}
    found = [f"{a} -> {b}" for a, t in graph.items() if home(a) == "genotile.core" for b in t if b in writers]
    assert not found, "; ".join(found)
