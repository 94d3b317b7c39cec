"""Stub of the reference's iron/lm/tune.py: application_model(name).

The one class `iron.applications.<name>` exports (`__all__`) whose MRO
defines `tune_calls`; ValueError naming what is wrong otherwise.
"""

import importlib

from iron._stub import hide


def application_model(name):
    try:
        package = importlib.import_module(f"iron.applications.{name}")
    except ImportError as e:
        raise ValueError(f"no application {name!r}: {e}") from e
    exported = [getattr(package, n) for n in vars(package).get("__all__", ())]
    found = [m for m in exported if isinstance(m, type)
             and any("tune_calls" in vars(k) for k in m.__mro__)]
    if len(found) != 1:
        raise ValueError(
            f"iron.applications.{name} exports {len(found)} models to tune, not one")
    return found[0]


hide(__name__, globals())
