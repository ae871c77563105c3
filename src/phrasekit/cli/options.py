"""Typer options generated from a config dataclass (or a function's keyword parameters).

A default then lives in one place, the dataclass: ``ConfigOptions`` turns each field into an
option (``max_steps`` -> ``--max-steps``; bools -> ``--x/--no-x``; ``tuple[float, ...]`` -> a
comma-separated string), and ``with_config`` adds the options to a typer command, which receives
the values as one dict of field values per group.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import sys
import types
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import typer

_SCALARS = (int, float, str, bool, Path)
_ITEMS = (int, float, str)  # element types of comma-separated tuple options
_TRAILING = ("quiet", "verbose")  # generated options are listed before these


def parse_list(text: str | None, option: str, item: type = float) -> tuple[Any, ...] | None:
    """``"0,0.5,1"`` -> ``(0.0, 0.5, 1.0)``; None stays None; anything else is a clear error."""
    if text is None:
        return None
    try:
        values = tuple(item(x.strip()) for x in text.split(",") if x.strip())
    except ValueError:
        kind = "numbers" if item in (int, float) else "values"
        raise typer.BadParameter(f"{option} takes comma-separated {kind}, got {text!r}") from None
    if not values:
        raise typer.BadParameter(f"{option} is empty")
    return values


@dataclass(frozen=True)
class OptionSpec:
    """One generated option: the field it sets, its declaration and how to read its value."""

    name: str
    decls: tuple[str, ...]
    cli_type: Any
    default: Any
    help: str
    item: type | None = None  # set for comma-separated tuple fields
    empty: bool = False  # the field's default is an empty tuple (the option's default: unset)

    def parameter(self) -> inspect.Parameter:
        """The typer parameter (a keyword-only ``Annotated`` one)."""
        annotation = Annotated[self.cli_type, typer.Option(*self.decls, help=self.help)]
        return inspect.Parameter(self.name, inspect.Parameter.KEYWORD_ONLY,
                                 default=self.default, annotation=annotation)

    def value(self, raw: Any) -> Any:
        """The field value for what the option parsed."""
        if self.empty and raw is None:
            return ()
        return parse_list(raw, self.decls[0], self.item) if self.item else raw


@dataclass(frozen=True)
class ConfigOptions:
    """Options for the fields of ``source`` (a dataclass or a function) that have a default.

    ``help`` maps field -> help text; ``exclude`` names fields that are not options;
    ``rename`` maps field -> option declaration (``"--char-encoder"``, ``"-k"``,
    ``"--train-topics/--freeze-topics"``); ``named`` maps an excluded field that the command
    sets from an option of its own to that option (for messages about the field). Fields
    whose type cannot be an option (dicts, unions of several types, ...) are skipped, so new
    fields never break the command line.
    """

    source: Any
    help: Mapping[str, str]
    exclude: Collection[str] = ()
    rename: Mapping[str, str] = field(default_factory=dict)
    named: Mapping[str, str] = field(default_factory=dict)

    def specs(self) -> list[OptionSpec]:
        """The options, in field order."""
        out = []
        for name, annotation, default in _fields(self.source):
            kind = None if name in self.exclude else _cli_type(annotation)
            if kind is None:
                continue
            cli_type, item = kind
            decl = self.rename.get(name, "--" + name.replace("_", "-"))
            if cli_type is bool and "/" not in decl and decl.startswith("--"):
                decl = f"{decl}/--no-{decl[2:]}"
            empty = item is not None and default == ()
            if item is not None and default is not None:
                default = ",".join(str(x) for x in default) or None
            out.append(OptionSpec(name, (decl,), cli_type, default, self.help.get(name, ""),
                                  item, empty))
        return out

    def values(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Pop this group's option values from a command's ``kwargs`` as field values."""
        return {spec.name: spec.value(kwargs.pop(spec.name)) for spec in self.specs()}


def with_config(**groups: ConfigOptions) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add each group's options to a typer command, before its --quiet/--verbose.

    The command declares one keyword-only parameter per group (``*, settings: dict``) and
    receives that group's field values in it.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn, eval_str=True)
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
               for p in sig.parameters.values() if p.name not in groups]
        generated = [s.parameter() for g in groups.values() for s in g.specs()]
        names = [p.name for p in own + generated]
        if len(set(names)) != len(names):
            raise ValueError(f"{fn.__name__}: an option name is generated twice: {names}")
        at = next((i for i, p in enumerate(own) if p.name in _TRAILING), len(own))

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            for key, group in groups.items():
                kwargs[key] = group.values(kwargs)
            return fn(**kwargs)

        wrapper.__signature__ = sig.replace(parameters=[*own[:at], *generated, *own[at:]])
        wrapper.config_fields = frozenset(s.name for g in groups.values() for s in g.specs())
        wrapper.config_flags = {k: v for g in groups.values() for k, v in g.named.items()}
        return wrapper

    return decorate


def _fields(source: Any) -> list[tuple[str, Any, Any]]:
    """(name, resolved type or None, default) of the fields or parameters with a default."""
    if dataclasses.is_dataclass(source):
        namespace = vars(sys.modules[source.__module__])
        return [(f.name, _resolve(f.type, namespace), f.default)
                for f in dataclasses.fields(source) if f.default is not dataclasses.MISSING]
    params = inspect.signature(source).parameters.values()
    return [(p.name, _resolve(p.annotation, source.__globals__), p.default)
            for p in params if p.default is not inspect.Parameter.empty]


def _resolve(annotation: Any, namespace: dict[str, Any]) -> Any:
    """A type from a (possibly string) annotation; None when it cannot be evaluated."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, namespace)  # the annotations of phrasekit's own modules
    except Exception:
        return None


def _cli_type(annotation: Any) -> tuple[Any, type | None] | None:
    """(typer type, tuple item type or None) for a field type; None when not an option."""
    optional = False
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            return None
        annotation, optional = args[0], True
    if annotation in _SCALARS:
        return (annotation | None if optional else annotation), None
    args = get_args(annotation)
    if get_origin(annotation) is tuple and len(args) == 2 and args[1] is Ellipsis \
            and args[0] in _ITEMS:
        return str | None, args[0]
    return None


def parameter_defaults(fn: Callable[..., Any]) -> dict[str, Any]:
    """A command function's parameter defaults: what tells an option the user set."""
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()}


def option_flags(fn: Callable[..., Any]) -> dict[str, str]:
    """Each option parameter of a typer command function and its long flag, else its short
    one (``max_minutes`` -> ``--max-minutes`` in one command, ``--minutes`` in another); an
    option declared without names has typer's, ``--`` and the name with dashes."""
    try:
        params = inspect.signature(fn, eval_str=True).parameters
    except (NameError, TypeError):
        return {}
    flags: dict[str, str] = {}
    for name, param in params.items():
        for meta in getattr(param.annotation, "__metadata__", ()):
            decls = (getattr(meta, "default", None), *(getattr(meta, "param_decls", ()) or ()))
            named = [d for d in decls if isinstance(d, str) and d.startswith("-")]
            long = [d for d in named if d.startswith("--")] or named
            if long:
                flags[name] = long[0].split("/")[0]  # "--x/--no-x" -> "--x"
            elif isinstance(meta, typer.models.OptionInfo):
                flags[name] = "--" + name.replace("_", "-")
    return flags


def name_flags(message: str, flags: Mapping[str, str], words: Collection[str] = ()) -> str:
    """A library message with the settings it names written as the command's flags
    (``hard_negatives must be >= 0`` -> ``--hard-negatives must be >= 0``). Names with an
    underscore are replaced wherever they stand as a word; single-word names only when in
    ``words`` (a config's fields, which its messages name as such)."""
    for name, flag in sorted(flags.items(), key=lambda item: -len(item[0])):
        if "_" in name or name in words:
            message = re.sub(rf"(?<![\w./-]){re.escape(name)}(?![\w/-]|\.\w)", flag, message)
    return message
