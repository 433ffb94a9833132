"""Reading taxonomy files: every problem named with its line, or every row."""

from __future__ import annotations

from ml.builder.logic.taxonomy import TaxonomyRow, read_taxonomy_lines


def test_good_lines_become_rows_with_names_tidied() -> None:
    rows, problems = read_taxonomy_lines(
        [
            '{"domain": "Work", "subcategory": "Career", "topic": "a  missed   promotion"}',
            "",
            '{"domain": "Work", "subcategory": "Career", "topic": "layoffs", "active": false}',
        ]
    )
    assert problems == []
    assert rows == [
        TaxonomyRow("Work", "Career", "a missed promotion"),
        TaxonomyRow("Work", "Career", "layoffs", active=False),
    ]


def test_each_bad_line_is_named() -> None:
    _, problems = read_taxonomy_lines(
        [
            "not json",
            "[1, 2]",
            '{"domain": "Work", "subcategory": "", "topic": "x"}',
            '{"domain": "Work", "subcategory": "Career", "topic": "x", "colour": "red"}',
            '{"domain": "Work", "subcategory": "Career", "topic": "x"}',
            '{"domain": "work", "subcategory": "career", "topic": "X"}',
        ]
    )
    assert [problem.split(":")[0] for problem in problems] == [
        "line 1",
        "line 2",
        "line 3",
        "line 4",
        "line 6",
    ]
    assert "same topic as line 5" in problems[-1]


def test_an_empty_file_is_refused() -> None:
    assert read_taxonomy_lines(["", "  "]) == ([], ["the file holds no topic"])
