"""The package has no import cycles: the graph of genotile's modules, an edge for every import of
one genotile module by another (at module level or inside a function: a late import that only
hides a cycle counts), is acyclic. Read from the source with ast; nothing is imported."""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "genotile").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported(tree: ast.AST, known: dict) -> set[str]:
    """The genotile modules a module's code imports (`from pkg import mod` names the module)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "genotile"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "genotile":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if sub in known else node.module)
    return out & set(known)


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(ast.parse(path.read_text()), known) - {name} for name, path in known.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each back edge of a depth-first search (none: the graph is acyclic)."""
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def test_find_cycles_finds_one():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_the_graph_is_read():
    graph = import_graph()
    assert len(graph) > 40
    assert "genotile.store.ingest_genotypes" in graph["genotile.store.ingest"]  # ingest dispatches to it
    assert "genotile.util.atomic" in graph["genotile.store.ingest_genotypes"]


def test_no_import_cycles():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)
