"""Where weights come from: named, offline-loadable models."""

from phrasekit.models.registry import available_models, check_model_name, load, register

__all__ = ["available_models", "check_model_name", "load", "register"]
