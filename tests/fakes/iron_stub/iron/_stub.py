"""The stub's own switch, not IRON's: IRON_STUB_HIDE takes out an API.

IRON_STUB_HIDE is a comma-separated list of dotted names, a module's name
(`iron.tune.measure.Image`) or a class's attribute
(`iron.common.declare.operator.Operator.declaration`). A stub module calls
`hide(__name__, globals())` last, so a test can stand in an older IRON that
lacks one API and check the error names it.
"""

import os


def hide(module: str, namespace: dict) -> None:
    for entry in filter(None, os.environ.get("IRON_STUB_HIDE", "").split(",")):
        owner, _, name = entry.strip().rpartition(".")
        if owner == module:
            namespace.pop(name, None)
        elif owner.startswith(module + ".") and "." not in owner[len(module) + 1:]:
            cls = namespace.get(owner[len(module) + 1:])
            if cls is not None and name in vars(cls):
                delattr(cls, name)
