"""The package's modules import one another without circles (module-level and function-level imports
alike): a circle makes the order of imports matter and hides which module owns what. Reads the sources
only (ast); nothing is imported."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2] / "python" / "tilefuse"


def module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules():
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(name, path, known):
    """The tilefuse modules `name` imports anywhere in its source (package __init__s excepted)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (base + "." + node.module if node.module else base) if node.level else node.module or ""
            for alias in node.names:
                candidate = target + "." + alias.name
                found.add(candidate if candidate in known else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    packages = {n for n, p in known.items() if p.name == "__init__.py"}
    return {m for m in found if m in known and m not in packages and m != name}


def find_circles(graph):
    """Every import circle a depth-first walk of graph (module -> the modules it imports) meets, as "a -> b -> a"."""
    circles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                circles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return circles


def test_no_import_circles():
    known = modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    circles = find_circles(graph)
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_checker_sees_a_circle():
    assert find_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a -> b -> c -> a"]
    assert find_circles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []  # a diamond is no circle
    assert find_circles({"a": {"a"}}) == ["a -> a"]
    known = modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    assert "tilefuse.op_common" in graph["tilefuse.conv_ops"]  # function- and module-level imports are edges
    assert "tilefuse.conv_ops" in graph["tilefuse.ops"]
