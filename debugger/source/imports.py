"""A Python file's imports: what each name it binds by import stands for, the modules it names, and the
qualified name (`torch.nn.functional.linear`) an identifier or attribute chain resolves to through them
and through `F = torch.nn.functional`-style aliases. The host model (host.py) keeps these per file.
"""
from __future__ import annotations

from debugger.source.tree import Node, call_args, string_value, text, unparen, walk


def import_bindings(root: Node) -> list[tuple[str, str, Node]]:
    """(bound name, qualified module or object, node) for every import in the file."""
    found = []
    for node in walk(root):
        if node.type == "import_statement":
            for item in node.children_by_field_name("name"):
                if item.type == "aliased_import":
                    found.append((text(item.child_by_field_name("alias")),
                                  text(item.child_by_field_name("name")), node))
                else:
                    dotted = text(item)
                    found.append((dotted.split(".")[0], dotted.split(".")[0], node))
        elif node.type == "import_from_statement":
            module = text(node.child_by_field_name("module_name"))
            for item in node.children_by_field_name("name"):
                if item.type == "aliased_import":
                    name = text(item.child_by_field_name("name"))
                    found.append((text(item.child_by_field_name("alias")), f"{module}.{name}", node))
                else:
                    found.append((text(item), f"{module}.{text(item)}", node))
    return found


def imported_modules(root: Node) -> list[tuple[str, Node]]:
    """Every module named by an import statement (`from a.b import c` names a.b and a.b.c)."""
    modules = []
    for node in walk(root):
        if node.type == "import_statement":
            for item in node.children_by_field_name("name"):
                target = item.child_by_field_name("name") if item.type == "aliased_import" else item
                modules.append((text(target), node))
        elif node.type == "import_from_statement":
            module = text(node.child_by_field_name("module_name"))
            modules.append((module, node))
            for item in node.children_by_field_name("name"):
                target = item.child_by_field_name("name") if item.type == "aliased_import" else item
                modules.append((f"{module}.{text(target)}", node))
    return modules


def wildcard_modules(root: Node) -> list[str]:
    """Modules imported with `from m import *`."""
    return [text(n.child_by_field_name("module_name")) for n in walk(root)
            if n.type == "import_from_statement"
            and any(c.type == "wildcard_import" for c in n.children)]


def alias_table(root: Node, bindings: list[tuple[str, str, Node]]) -> dict[str, str]:
    """Local name -> qualified name, from imports and from `F = torch.nn.functional`-style assignments."""
    table = {name: target for name, target, _ in bindings}
    assignments = []
    for node in walk(root):
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None and left.type == "identifier":
                if unparen(right).type in ("attribute", "identifier", "call"):
                    assignments.append((text(left), unparen(right)))
    for _ in range(3):  # aliases of aliases
        for name, right in assignments:
            if right.type == "call":
                continue
            target = resolve_with(table, right)
            if target is not None and target != name:
                table[name] = target
    return table


def resolve_with(table: dict[str, str], node: Node) -> str | None:
    """The qualified name `node` (an identifier, attribute chain or getattr with a literal name) stands for
    under `table` (local name -> qualified name), None when it does not start from a name in it."""
    node = unparen(node)
    if node.type == "identifier":
        return table.get(text(node))
    if node.type == "attribute":
        base = resolve_with(table, node.child_by_field_name("object"))
        return f"{base}.{text(node.child_by_field_name('attribute'))}" if base else None
    if node.type == "call":  # getattr(torch, "mm") with a literal name
        fn = node.child_by_field_name("function")
        if fn is not None and text(fn) == "getattr":
            positional, _ = call_args(node)
            if len(positional) >= 2 and string_value(positional[1]) is not None:
                base = resolve_with(table, positional[0])
                return f"{base}.{string_value(positional[1])}" if base else None
    return None
