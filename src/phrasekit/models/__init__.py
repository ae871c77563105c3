"""Where weights come from: named, offline-loadable models."""

from phrasekit.models.registry import available_models, load, register

__all__ = ["available_models", "load", "register"]
