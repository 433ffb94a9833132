"""docs/architecture.md names real code that the app calls, so its rule index cannot drift.

The convention it follows is stated on the page and in tests/docs/code_names.py.
"""

from __future__ import annotations

from pathlib import Path

from tests.docs.code_names import (
    DOTTED_MODULE,
    PATH_THEN_NAME,
    ROOT,
    bare_name,
    defined_in,
    defined_names,
    diagram_modules,
    is_used,
    looks_like_path,
    module_file,
    prose_spans,
    room_paths,
    rule_rows,
)

PAGE = (ROOT / "docs" / "architecture.md").read_text()


def test_the_page_states_its_convention() -> None:
    assert "tests/docs/test_architecture_index.py" in PAGE


def test_every_file_a_rule_names_exists() -> None:
    rows = rule_rows(PAGE)
    assert len(rows) > 50, "the rule table was not found"
    missing = [(row.question, path) for row in rows for path in row.paths if not (ROOT / path).exists()]
    assert missing == []


def test_every_name_a_rule_gives_is_defined_in_its_files() -> None:
    undefined = [
        (row.question, name, row.paths)
        for row in rule_rows(PAGE)
        for name in row.names
        if not defined_in(name, row.paths)
    ]
    assert undefined == []


def test_every_name_a_rule_gives_is_used_outside_the_tests() -> None:
    # A rule only a test calls is not the rule the app follows (issue #29: `affected_stages`).
    unused = [
        (row.question, name) for row in rule_rows(PAGE) for name in row.names if not is_used(name, row.paths)
    ]
    assert unused == []


def test_every_path_and_module_named_in_prose_exists() -> None:
    missing = []
    for span in prose_spans(PAGE):
        token = bare_name(span)
        if looks_like_path(span) and "/" in span:
            if not list(ROOT.glob(span.rstrip("/"))):
                missing.append(span)
        elif DOTTED_MODULE.match(token) and not _module_or_name(token):
            missing.append(span)
    assert missing == []


def test_every_path_of_the_rooms_exists() -> None:
    rooms = room_paths(PAGE)
    assert ("ml/builder/pages/", ("",)) in rooms
    missing = [
        span for span, folders in rooms if not any(list(ROOT.glob(str(Path(f) / span))) for f in folders)
    ]
    assert missing == []


def test_every_module_in_the_layer_diagram_exists() -> None:
    modules = diagram_modules(PAGE)
    assert "ml.builder.pages.sampling" in modules
    assert [name for name in modules if module_file(name) is None] == []


def test_every_file_then_name_in_prose_is_defined_there() -> None:
    pairs = PATH_THEN_NAME.findall(" ".join(line for line in PAGE.splitlines() if not line.startswith("|")))
    assert [(path, name) for path, name in pairs if not defined_in(bare_name(name), (path,))] == []


def _module_or_name(dotted: str) -> bool:
    if module_file(dotted):
        return True
    module, _, name = dotted.rpartition(".")
    found = module_file(module)
    return found is not None and name in defined_names(found)
