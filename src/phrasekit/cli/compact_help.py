"""A compact ``--help`` for commands with many options (``topics``): usage lines, the
description, the examples verbatim (never wrapped mid-command), then one entry per option of
at most two lines (its first sentence and its default); flags show no value placeholder."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

import click

#: Python type names (typer's ``bare_type``) shown as the value an option takes.
VALUE_NAMES = {"int": "N", "float": "X", "str": "TEXT", "Path": "PATH"}
#: Lines of help text per option at most.
OPTION_LINES = 2


def first_sentence(text: str) -> str:
    """``text`` up to its first full stop followed by a space (all of it without one)."""
    text = " ".join(text.replace("\\[", "[").split())  # rich markup's escaped brackets
    cut = text.find(". ")
    return text if cut < 0 else text[: cut + 1]


def _is_option(param: click.Parameter) -> bool:
    """An option, not an argument (by duck type: typer vendors its own click)."""
    return getattr(param, "param_type_name", "") == "option"


def _names(param: click.Parameter) -> str:
    if not _is_option(param):
        return str(getattr(param, "metavar", None) or param.name.upper())
    opts = sorted(param.opts, key=len)
    if param.secondary_opts:
        return "/".join([opts[-1], *param.secondary_opts])
    bare = param.bare_type() if hasattr(param, "bare_type") else "str"
    value = "" if param.is_flag else " " + VALUE_NAMES.get(bare, bare.upper())
    return ", ".join(opts) + value


def _text(param: click.Parameter) -> str:
    text = first_sentence(getattr(param, "help", None) or "")
    default = param.default
    if param.required:
        text += " [required]"
    elif _is_option(param) and param.secondary_opts and isinstance(default, bool):
        text += f" [default: {param.opts[0] if default else param.secondary_opts[0]}]"
    elif not (default is None or default is False or default in ("", ())
              or callable(default)):
        text += f" [default: {default}]"
    return text


def option_lines(params: Sequence[click.Parameter], width: int) -> list[str]:
    """One entry per parameter: its names in a column, then its text in at most
    ``OPTION_LINES`` lines of ``width`` columns (cut with an ellipsis)."""
    shown = [p for p in params if not getattr(p, "hidden", False)]
    col = min(max(len(_names(p)) for p in shown) + 4, 30)
    lines = []
    for param in shown:
        names = _names(param)
        body = textwrap.wrap(_text(param), max(20, width - col))
        if len(body) > OPTION_LINES:  # cut after the last whole word that leaves room for …
            body = body[:OPTION_LINES]
            last = body[-1]
            if len(last) >= width - col:
                last = last[: width - col - 1].rsplit(" ", 1)[0]
            body[-1] = last.rstrip(" ,;:") + "…"
        first = f"  {names}".ljust(col) if len(names) + 4 <= col else None
        if first is None:  # a long name: its text starts on the next line
            lines.append(f"  {names}")
            first = " " * col
        lines.append(first + (body[0] if body else ""))
        lines += [" " * col + part for part in body[1:]]
    return lines


def compact_help(command: click.Command, ctx: click.Context, usage: Sequence[str],
                 examples: Sequence[str]) -> str:
    """The compact help of ``command``: ``usage`` lines (after the command path), the first
    paragraph of its help, ``examples`` verbatim, then its options."""
    width = min(shutil.get_terminal_size((100, 24)).columns, 100)
    path = ctx.command_path
    head = [f"Usage: {path} {usage[0]}", *(f"       {path} {u}" for u in usage[1:])]
    about = (command.help or "").split("\n\n")[0]
    lines = [*head, "", *textwrap.wrap(" ".join(about.split()), width), "", "Examples:",
             *(f"  {e}" for e in examples), "", "Options:",
             *option_lines(command.get_params(ctx), width)]
    return "\n".join(lines) + "\n"
