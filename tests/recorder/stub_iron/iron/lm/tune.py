"""iron.lm.tune's lookup of an application's model, as IRON states it."""

import importlib


def application_model(name):
    """The class iron.applications.NAME exports that defines tune_calls; ValueError otherwise."""
    try:
        package = importlib.import_module(f"iron.applications.{name}")
    except ImportError as e:
        raise ValueError(f"no application {name!r}: {e}") from e
    exported = [getattr(package, n) for n in vars(package).get("__all__", ())]
    found = [
        m
        for m in exported
        if isinstance(m, type) and any("tune_calls" in vars(k) for k in m.__mro__)
    ]
    if len(found) != 1:
        raise ValueError(
            f"iron.applications.{name} exports {len(found)} models to tune, not one"
        )
    return found[0]
