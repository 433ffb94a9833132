"""Read the code names docs/architecture.md gives, and answer whether the code defines and uses them.

The page's convention (stated above its rule table):

- In the table "Where each rule lives", each row's middle column names files or folders in
  backticks (`path/file.py`; a bare `file.py` sits beside the row's first path) and its right
  column names, in backticks, what those files define: a function, class, constant, method or
  field. A dotted name (`GoldReference.objects.current_of`, `tokens.TokenAuthentication`) may
  start with a module beside the row's files; every further part is defined in the files. What
  follows a `(` is a call's arguments and is not a name.
- Elsewhere, a backticked path names a file or folder that exists; a backticked dotted name that
  starts with `annotation.`, `evaluation.`, `ml.` or `webapp.` names a module (or a module and
  a name it defines); `path`: `name` says that file defines that name.

Definitions are read from the files' syntax (ast), so nothing is imported. A name is used when
code outside tests/ refers to it: a Python name or attribute, a string other than a docstring
(settings name middleware and classes by dotted string), a decorator that registers it (Django
admin, signal receivers, Celery tasks, template tags), or a word of a template, script or
stylesheet other than its own definition.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("annotation", "evaluation", "ml", "webapp")
APP_TEXT_GLOBS = ("templates/**/*.html", "static/js/**/*.js", "static/css/**/*.css")
CODE_SPAN = re.compile(r"`([^`]+)`")
DOTTED_MODULE = re.compile(r"^(?:annotation|evaluation|ml|webapp)(?:\.\w+)+$")
PATH_THEN_NAME = re.compile(r"`([\w./-]+\.(?:py|js|css))`:\s*`([^`]+)`")


@dataclass(frozen=True)
class RuleRow:
    """One row of the rule table: its question, the files it names, and the names it gives."""

    question: str
    paths: tuple[str, ...]
    names: tuple[str, ...]


def cells(line: str) -> list[str]:
    """Return a Markdown table line's cells, splitting only on pipes outside code spans."""
    found, current, in_code = [], "", False
    for char in line.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            found.append(current.strip())
            current = ""
        else:
            current += char
    return [*found, current.strip()]


def looks_like_path(token: str) -> bool:
    """Return True when a code span names a file or folder rather than code (or a site path: `/docs/`)."""
    return (
        " " not in token
        and not token.startswith("/")
        and ("/" in token or bool(re.search(r"\.(py|js|css|html|md)$", token)))
    )


def bare_name(token: str) -> str:
    """Return the name a code span gives, without a call's arguments: `f(a, b)` -> `f`."""
    return token.split("(")[0].strip()


def section(text: str, heading: str) -> list[str]:
    """Return the lines of the `## heading` section of a Markdown page."""
    lines = text.splitlines()
    start = lines.index(f"## {heading}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def rule_rows(text: str) -> list[RuleRow]:
    """Return the rows of the page's "Where each rule lives" table."""
    rows = []
    for line in section(text, "Where each rule lives"):
        if not line.startswith("|") or set(line) <= {"|", "-", " "}:
            continue
        question, where, names = cells(line)
        if question == "question":
            continue
        spans = CODE_SPAN.findall(where) + CODE_SPAN.findall(names)
        paths = tuple(span for span in CODE_SPAN.findall(where) if looks_like_path(span))
        given = tuple(bare_name(span) for span in spans if not looks_like_path(span))
        rows.append(RuleRow(question, _beside(paths), given))
    return rows


def _beside(paths: tuple[str, ...]) -> tuple[str, ...]:
    """Resolve a bare `file.py` against the folder of the row's first path with a folder."""
    folder = next((str(Path(p).parent) for p in paths if "/" in p.rstrip("/")), "")
    return tuple(p if "/" in p else f"{folder}/{p}" for p in paths)


def python_files(path: str) -> list[Path]:
    """Return the Python files a table path stands for (a file, or every module of a folder)."""
    full = ROOT / path
    return sorted(full.rglob("*.py")) if full.is_dir() else [full] if full.suffix == ".py" else []


def module_file(dotted: str) -> Path | None:
    """Return the file of an importable dotted module name, or None."""
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Return every name a Python file defines: top-level and class-level functions, classes,
    assignments and annotated fields (nested classes included)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.ClassDef):
                names.add(node.name)
                visit(node.body)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)

    visit(ast.parse(path.read_text()).body)
    return frozenset(names)


def defined_in(name: str, paths: tuple[str, ...]) -> bool:
    """Return True when the row's files define `name` (see the module docstring for dotted names)."""
    parts = name.split(".")
    texts = [ROOT / p for p in paths if (ROOT / p).is_file() and (ROOT / p).suffix in {".js", ".css"}]
    if len(parts) == 1 and any(name in path.read_text() for path in texts):
        return True
    files = [f for p in paths for f in python_files(p)]
    for start in range(len(parts)):
        prefix = ".".join(parts[:start])
        modules = _modules_named(prefix, files) if prefix else files
        if modules and all(any(part in defined_names(m) for m in modules) for part in parts[start:]):
            return True
    return False


def _modules_named(prefix: str, files: list[Path]) -> list[Path]:
    """Return the modules `prefix` names: a root dotted module, or one beside or above the files."""
    found = module_file(prefix)
    candidates = [found] if found else []
    for file in files:
        for folder in file.relative_to(ROOT).parents:
            near = module_file(".".join([*folder.parts, prefix])) if folder.parts else None
            if near:
                candidates.append(near)
    return sorted(set(candidates))


@cache
def used_names() -> Counter[str]:
    """Return how often each name is referred to by code outside tests/ (not counting definitions)."""
    used: Counter[str] = Counter()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                used.update(_python_references(ast.parse(path.read_text())))
    for pattern in APP_TEXT_GLOBS:
        for path in ROOT.glob(pattern):
            if "vendor" not in path.parts:
                used.update(re.findall(r"--[\w-]+|[A-Za-z_]\w*", path.read_text()))
    return used


def _python_references(tree: ast.Module) -> list[str]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    exports = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.decorator_list:
            found.append(node.name)  # registered by its decorator (admin, receiver, task, template tag)
        elif isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.alias):
            found.append(node.name.split(".")[-1])
        elif isinstance(node, ast.List | ast.Tuple) and id(node) in exports:
            for element in node.elts:
                docstrings.add(id(element))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += re.findall(r"[A-Za-z_]\w*", node.value)
    return found


def is_used(name: str, paths: tuple[str, ...]) -> bool:
    """Return True when code outside tests/ refers to the last part of `name`.

    A script's or stylesheet's name counts its own definition among its words, so it needs two.
    """
    last = name.split(".")[-1]
    in_python = any(python_files(p) for p in paths)
    return used_names()[last] >= (1 if in_python else 2)


def room_paths(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """Return each path the "rooms" table gives, with the folders a bare name there sits in: the
    row's package and the folders of the paths before it."""
    found = []
    for line in section(text, "The rooms"):
        if not line.startswith("|") or set(line) <= {"|", "-", " "}:
            continue
        spans = [span for span in CODE_SPAN.findall(line) if looks_like_path(span)]
        for index, span in enumerate(spans):
            folders = tuple(str(Path(p)) if p.endswith("/") else str(Path(p).parent) for p in spans[:index])
            found.append((span, ("", *folders)))
    return found


def prose_spans(text: str) -> list[str]:
    """Return the code spans of the page outside its two tables and outside fenced blocks."""
    rules = set(section(text, "Where each rule lives")) | set(section(text, "The rooms"))
    fenced, spans = False, []
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line not in rules:
            spans += CODE_SPAN.findall(line)
    return spans


def diagram_modules(text: str) -> list[str]:
    """Return the dotted module names the page's fenced diagram gives, braces expanded."""
    fenced, found = False, []
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            for token in re.findall(r"(?<![.\w])(?:annotation|evaluation|ml|webapp)[\w.{},]*", line):
                head, _, rest = token.partition("{")
                found += [head + choice for choice in rest.rstrip("}").split(",")] if rest else [token]
    return [name.rstrip(".") for name in found]
