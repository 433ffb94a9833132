"""What tests/test_test_hygiene.py looks for in the test sources, read with `ast`.

Three habits keep tests from colliding or flaking on timing (issue 29):

- files a test writes go under its own `tmp_path`, never a fixed place in the system temp folder;
- every skip goes through `tests.conftest.skip_or_fail`, so CI (ECHOSTUDIO_REQUIRE_SERVICES=1)
  fails a test whose service is missing instead of passing it by skipping;
- a test waits for an event or polls a condition with a deadline; a plain sleep (`time.sleep`,
  Playwright's `wait_for_timeout`) only inside a polling loop, or where the waiting itself is
  the behaviour under test (an allow-list with reasons).
"""

from __future__ import annotations

import ast
import tempfile
from dataclasses import dataclass

SKIP_HELPER = "skip_or_fail"
SLEEP_CALLS = frozenset({"sleep", "wait_for_timeout"})
SKIP_CALLS = frozenset({"skip", "importorskip"})
# Calls that take a path to write or to build one from. A /tmp literal elsewhere (a URI stored on a
# row, the expected result of parsing a URL) names nothing the test writes.
PATH_TAKERS = frozenset(
    {
        "Path",
        "PurePath",
        "open",
        "join",
        "screenshot",
        "write_text",
        "write_bytes",
        "mkdir",
        "makedirs",
        "touch",
        "copy",
        "copyfile",
        "copytree",
        "move",
        "replace",
        "rename",
        "symlink_to",
        "savefig",
        "save",
        "NamedTemporaryFile",
        "TemporaryDirectory",
        "mkdtemp",
        "mkstemp",
    }
)
# Where a fixed file name would be shared by every test and every run on the machine.
TEMP_FOLDERS = tuple(dict.fromkeys(("/tmp", tempfile.gettempdir().rstrip("/") or "/tmp")))


@dataclass(frozen=True)
class Finding:
    """One habit broken at one line of one test source."""

    path: str
    line: int
    rule: str
    detail: str
    function: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.line} ({self.function}): {self.rule}: {self.detail}"


def _under_temp(text: str) -> bool:
    return any(text == folder or text.startswith(folder + "/") for folder in TEMP_FOLDERS)


def _dotted(node: ast.expr) -> str:
    """Return `a.b.c` for a name or attribute chain, "" for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


class _Scanner(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.findings: list[Finding] = []
        self.functions: list[str] = []
        self.while_depth = 0
        self.sleep_names: set[str] = set()  # names bound by `from time import sleep`
        self.skip_names: set[str] = set()  # names bound by `from pytest import skip`

    def _add(self, node: ast.AST, rule: str, detail: str) -> None:
        function = self.functions[-1] if self.functions else "<module>"
        self.findings.append(Finding(self.path, getattr(node, "lineno", 0), rule, detail, function))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        # A loop outside the function does not make a sleep inside it a poll.
        depth, self.while_depth = self.while_depth, 0
        self.generic_visit(node)
        self.while_depth = depth
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_While(self, node: ast.While) -> None:
        self.while_depth += 1
        for child in node.body:
            self.visit(child)
        self.while_depth -= 1
        self.visit(node.test)
        for child in node.orelse:
            self.visit(child)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if node.module in ("time", "asyncio") and alias.name == "sleep":
                self.sleep_names.add(alias.asname or alias.name)
            if node.module == "pytest" and alias.name in SKIP_CALLS:
                self.skip_names.add(alias.asname or alias.name)
        self.generic_visit(node)

    def _temp_literal(self, node: ast.expr) -> str:
        """Return the literal when `node` is a string (or f-string) naming a place under /tmp."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _under_temp(node.value):
            return node.value
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and _under_temp(first.value):
                return ast.unparse(node)
        return ""

    def _check_assigned(self, value: ast.expr | None) -> None:
        if value is not None and (literal := self._temp_literal(value)):
            self._add(value, "fixed temp path", f"{literal!r} kept for writing: use tmp_path instead")

    def visit_Assign(self, node: ast.Assign) -> None:
        self._check_assigned(node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_assigned(node.value)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = _dotted(node)
        if name.endswith("mark.skip") or name.endswith("mark.skipif"):
            self._add(node, "bare skip", f"{name}: call {SKIP_HELPER} from the test or a fixture instead")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        # The called name itself, also at the end of a chain through calls: page.locator(...).screenshot
        last = node.func.attr if isinstance(node.func, ast.Attribute) else name
        name = name or f"...{last}"
        if name.endswith("gettempdir"):
            self._add(node, "fixed temp path", f"{name}(): write under tmp_path instead")
        if last in PATH_TAKERS:
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                if literal := self._temp_literal(argument):
                    self._add(argument, "fixed temp path", f"{name}({literal!r}): use tmp_path instead")
        in_helper = SKIP_HELPER in self.functions
        is_skip = (
            name in {"pytest.skip", "pytest.importorskip", "unittest.skip", "unittest.skipIf"}
            or name in self.skip_names
        )
        if is_skip and not in_helper:
            self._add(node, "bare skip", f"{name}(): call {SKIP_HELPER} instead")
        is_sleep = (
            name in {"time.sleep", "asyncio.sleep"} or name in self.sleep_names or last == "wait_for_timeout"
        )
        if is_sleep and self.while_depth == 0:
            self._add(node, "plain sleep", f"{name}(): wait for an event or poll with a deadline")
        self.generic_visit(node)


def scan_source(source: str, path: str = "<test>") -> list[Finding]:
    """Return every broken habit in one test module's source."""
    scanner = _Scanner(path)
    scanner.visit(ast.parse(source, filename=path))
    return scanner.findings
