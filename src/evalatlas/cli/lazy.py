"""Lazy command registration and global options anywhere, for the root ``evalatlas`` group.

Why: importing every command module (and with them duckdb, pyarrow, numpy, pydantic)
made ``evalatlas --version`` cost over a second. Here the command modules of this package
are *read*, not imported: the ``register(app)`` function of each is parsed with
:mod:`ast` to learn the names it registers (``app.command("name")(func)`` and
``app.add_typer(sub, name="name")``) and the one-line help (the function's docstring or
the sub-app's ``help=``). ``--help`` shows stubs built from that; running a command
imports its module and calls its ``register`` on a scratch app to get the real command.
A module whose ``register`` the reader does not understand is simply imported, so the
"a new module registers itself" rule keeps working for any shape of ``register``.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup


def _no_flag_metavar() -> None:
    """Help shows no ``<bool>`` beside a flag (``--force <bool>`` reads as if it took a
    value): typer 0.29 prints every parameter's type; a flag has none to type."""
    from typer.core import TyperOption

    if getattr(TyperOption.display_type_rich, "_evalatlas", False):
        return
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        return shown(self, ctx)

    display_type_rich._evalatlas = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_no_flag_metavar()

NOT_COMMANDS = {"main", "render", "common", "lazy", "guard"}
"""Modules of this package that are not command modules."""

_PACKAGE = "evalatlas.cli"


@dataclass(frozen=True)
class CommandInfo:
    name: str
    module: str
    help: str


def _first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    para = text.strip().split("\n\n")[0]
    return " ".join(line.strip() for line in para.splitlines())


def _str_kw(call: ast.Call, name: str) -> str | None:
    for kw in call.keywords:
        if kw.arg == name and isinstance(kw.value, ast.Constant) and isinstance(
                kw.value.value, str):
            return kw.value.value
    return None


def _statement(source: str, start: int) -> ast.stmt | None:
    """Parse the statement (or ``def`` header + docstring) that begins at ``start``."""
    lines = source[start:].splitlines()
    for n in range(1, min(len(lines), 80) + 1):
        try:
            tree = ast.parse("\n".join(lines[:n]))
        except SyntaxError:
            continue
        return tree.body[0] if tree.body else None
    return None


def _function(source: str, name: str) -> ast.FunctionDef | None:
    """``def name`` with its signature and docstring only (the body is not parsed)."""
    m = re.search(rf"^def {re.escape(name)}\(", source, re.M)
    if m is None:
        return None
    q = re.compile(r'^[ \t]+[rRuU]?("""|\'\'\')', re.M).search(source, m.end())
    stop = source.find("\ndef ", m.end())
    if q is None or (stop != -1 and q.start() > stop):
        text = source[m.start(): stop if stop != -1 else len(source)]
    else:
        close = source.find(q.group(1), q.end())
        if close == -1:
            return None
        text = source[m.start(): close + 3]
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.FunctionDef) else None


def scan_module(path: Path, module: str) -> list[CommandInfo] | None:
    """The commands ``module``'s ``register`` adds, or None when it cannot tell.

    Only the ``register`` function, the registered functions' signatures and docstrings,
    and sub-app assignments are parsed: parsing whole modules cost more than importing
    typer on a busy machine.
    """
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    if not re.search(r"^def register\(", source, re.M):
        return []
    register = _function(source, "register")
    if register is None:
        return None
    found: list[CommandInfo] = []
    for stmt in register.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return None
        call = stmt.value
        # app.command("name")(func)
        if (isinstance(call.func, ast.Call) and isinstance(call.func.func, ast.Attribute)
                and call.func.func.attr == "command" and call.func.args
                and isinstance(call.func.args[0], ast.Constant) and len(call.args) == 1
                and isinstance(call.args[0], ast.Name)):
            name = call.func.args[0].value
            text = _str_kw(call.func, "help")
            if text is None:
                fn = _function(source, call.args[0].id)
                if fn is None:
                    return None
                text = ast.get_docstring(fn)
            found.append(CommandInfo(str(name), module, _first_paragraph(text)))
            continue
        # app.add_typer(sub, name="name")
        if (isinstance(call.func, ast.Attribute) and call.func.attr == "add_typer"
                and _str_kw(call, "name") and call.args and isinstance(call.args[0], ast.Name)):
            text = _str_kw(call, "help")
            m = re.search(rf"^{re.escape(call.args[0].id)}\s*=", source, re.M)
            if text is None and m is not None:
                node = _statement(source, m.start())
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    text = _str_kw(node.value, "help")
            found.append(CommandInfo(str(_str_kw(call, "name")), module,
                                     _first_paragraph(text)))
            continue
        return None
    return found


@cache
def manifest() -> tuple[dict[str, CommandInfo], tuple[str, ...]]:
    """(command name -> info, modules that must be imported to know their commands)."""
    import evalatlas.cli as pkg

    commands: dict[str, CommandInfo] = {}
    opaque: list[str] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in NOT_COMMANDS:
            continue
        module = f"{_PACKAGE}.{info.name}"
        found = scan_module(Path(pkg.__path__[0]) / f"{info.name}.py", module)
        if found is None:
            opaque.append(module)
            continue
        for c in found:
            commands[c.name] = c
    return commands, tuple(opaque)


class _Stub(typer.core.TyperCommand):
    """What ``--help`` lists for a command whose module is not imported yet."""


class LazyGroup(TyperGroup):
    """A TyperGroup that imports command modules on first use and hoists global options."""

    _loaded: set[str]

    def _ensure_opaque(self) -> None:
        if getattr(self, "_opaque_done", False):
            return
        self._opaque_done = True
        for module in manifest()[1]:
            self._load_module(module)

    def _load_module(self, module: str) -> None:
        loaded = self.__dict__.setdefault("_loaded", set())
        if module in loaded:
            return
        loaded.add(module)
        register = getattr(importlib.import_module(module), "register", None)
        if not callable(register):
            return
        scratch = typer.Typer(rich_markup_mode=getattr(self, "rich_markup_mode", None),
                              pretty_exceptions_enable=False)
        register(scratch)
        group = typer.main.get_group(scratch)
        for name, cmd in group.commands.items():
            self.commands[name] = cmd

    def list_commands(self, ctx: Any) -> list[str]:
        self._ensure_opaque()
        names = dict.fromkeys(self.commands)
        names.update(dict.fromkeys(manifest()[0]))
        return sorted(names)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        self._ensure_opaque()
        if cmd_name in self.commands and not isinstance(self.commands[cmd_name], _Stub):
            return self.commands[cmd_name]
        info = manifest()[0].get(cmd_name)
        if info is None:
            return None
        return _Stub(name=cmd_name, help=info.help, short_help=info.help)

    def load_command(self, cmd_name: str) -> Any:
        """The real command: import its module and register it."""
        info = manifest()[0].get(cmd_name)
        if info is not None:
            self._load_module(info.module)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, cmd, rest = super().resolve_command(ctx, args)
        if isinstance(cmd, _Stub) or cmd is None:
            real = self.load_command(name) if name else None
            if real is not None:
                cmd = real
        return name, cmd, rest

    def invoke(self, ctx: Any) -> Any:
        """Run the command with signals handled and no traceback reaching the user
        (:mod:`evalatlas.cli.guard`)."""
        from evalatlas.cli.guard import guarded

        with guarded(ctx):
            return super().invoke(ctx)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self.hoist_global_options(ctx, list(args)))

    def hoist_global_options(self, ctx: Any, args: list[str]) -> list[str]:
        """Move this group's own options found after the subcommand to before it.

        An option is left where it is when the subcommand (or one of its subcommands)
        defines the same name, and nothing after ``--`` is touched.
        """
        globals_ = {o: p for p in self.params if p.param_type_name == "option"
                    for o in (*p.opts, *p.secondary_opts)}
        i = 0
        while i < len(args):  # skip global options before the subcommand
            key = args[i].split("=", 1)[0]
            if key not in globals_:
                break
            i += 1 if ("=" in args[i] or _is_flag(globals_[key])) else 2
        if i >= len(args) or args[i].startswith("-"):
            return args
        cmd = self.load_command(args[i])
        if cmd is None:
            return args
        taken = _option_names(cmd)
        before, after, moved = args[: i + 1], [], []
        j = i + 1
        while j < len(args):
            a = args[j]
            if a == "--":
                after += args[j:]
                break
            key = a.split("=", 1)[0]
            if key in globals_ and key not in taken:
                n = 1 if ("=" in a or _is_flag(globals_[key])) else 2
                moved += args[j:j + n]
                j += n
                continue
            after.append(a)
            j += 1
        return before[:i] + moved + before[i:] + after


def _is_flag(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False) or getattr(param, "count", False))


def _option_names(cmd: Any) -> set[str]:
    names = {o for p in getattr(cmd, "params", []) for o in (*getattr(p, "opts", ()),
                                                             *getattr(p, "secondary_opts", ()))}
    for sub in getattr(cmd, "commands", {}).values():
        names |= _option_names(sub)
    return names
