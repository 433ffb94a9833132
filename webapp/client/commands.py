"""What each `echostudio` command does, on top of `Studio` (one function per command)."""

from __future__ import annotations

import io
import sys
import time
import zipfile
from pathlib import Path
from typing import IO, Any

from webapp.client.session import ClientError, ProgressReader, Studio
from webapp.lib.coverage import NOT_COMPARABLE_MARK, NOT_COMPARABLE_NOTE
from webapp.lib.visible import visible

# A job's ends (webapp.models.FINISHED_STATUSES); the client depends on no server module.
FINISHED = {"succeeded", "finished_with_errors", "failed", "cancelled"}
# `--wait`'s exit status for each end: only a full success is 0 unless errors are allowed.
EXIT_SUCCEEDED, EXIT_REFUSED, EXIT_FAILED, EXIT_FINISHED_WITH_ERRORS = 0, 1, 2, 3


def wait_exit_status(status: str, *, allow_errors: bool = False) -> int:
    """Return the exit status of a `--wait` that saw a job end with `status`: 0 for succeeded (and
    for finished_with_errors with `allow_errors`), 3 for finished_with_errors, 2 for anything else."""
    if status == "succeeded" or (status == "finished_with_errors" and allow_errors):
        return EXIT_SUCCEEDED
    if status == "finished_with_errors":
        return EXIT_FINISHED_WITH_ERRORS
    return EXIT_FAILED


def register_system(
    studio: Studio, name: str, category: str, version: str, text_only: bool
) -> dict[str, Any]:
    """Register a system (or return the existing one of that name)."""
    existing = list(studio.all_pages("systems/", name=name))
    if existing:
        return existing[0]
    body = {"name": name, "category": category, "version": version, "text_only": text_only}
    return dict(studio.json("POST", "systems/", json=body))


def submit_outputs(
    studio: Studio,
    system_name: str,
    path: Path,
    *,
    audio_zip: Path | None = None,
    s3_prefix: str = "",
    benchmark_version: str = "",
    skip_invalid_rows: bool = False,
) -> dict[str, Any]:
    """Upload outputs: a zip holding one JSONL file and the audio, or a JSONL file with a zip or S3 prefix."""
    system = studio.one_named("systems/", system_name, "system")
    if zipfile.is_zipfile(path):
        if audio_zip is not None or s3_prefix:
            raise ClientError("A zip of outputs carries its own audio; drop --audio-zip / --s3-prefix.")
        rows = _jsonl_inside(path)
        audio_zip = path
    else:
        rows = path.read_bytes()
    data = {"skip_invalid_rows": "true" if skip_invalid_rows else "false"}
    if benchmark_version:
        data["benchmark_version"] = benchmark_version
    if s3_prefix:
        data["s3_prefix"] = s3_prefix
    size = len(rows) + (audio_zip.stat().st_size if audio_zip else 0)
    with studio.bar(size, "uploading") as bar:
        files: dict[str, tuple[str, Any, str]] = {
            "rows": ("outputs.jsonl", ProgressReader(io.BytesIO(rows), bar), "application/x-ndjson")
        }
        handle = audio_zip.open("rb") if audio_zip else None
        try:
            if handle is not None:
                files["audio_zip"] = ("audio.zip", ProgressReader(handle, bar), "application/zip")
            return dict(studio.json("POST", f"systems/{system['id']}/outputs/", data=data, files=files))
        finally:
            if handle is not None:
                handle.close()


def _jsonl_inside(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        names = [name for name in archive.namelist() if name.lower().endswith((".jsonl", ".ndjson"))]
        if len(names) != 1:
            raise ClientError(f"{path} must hold exactly one .jsonl file of outputs (found {len(names)}).")
        return archive.read(names[0])


def judge(
    studio: Studio,
    system_name: str,
    judge_name: str,
    *,
    benchmark_version: str = "",
    retry_errors: bool = False,
    wait: bool = False,
    poll_s: float = 1.0,
) -> dict[str, Any]:
    """Start a judge run; with `wait`, follow its progress bar until it ends."""
    system = studio.one_named("systems/", system_name, "system")
    judge_config = studio.one_named("judges/", judge_name, "judge")
    body: dict[str, Any] = {"system": system["id"], "judge": judge_config["id"], "retry_errors": retry_errors}
    if benchmark_version:
        body["benchmark_version"] = benchmark_version
    run = dict(studio.json("POST", "judge-runs/", json=body))
    if not wait:
        return run
    with studio.bar(100, f"judging {system_name}", unit="%") as bar:
        while run["job"] is None or run["job"]["status"] not in FINISHED:
            time.sleep(poll_s)
            run = studio.json("GET", f"judge-runs/{run['id']}/")
            if run["job"] is not None:
                bar.update(round(run["job"]["progress"] * 100) - bar.n)
    return run


def leaderboard(studio: Studio, fmt: str, *, judge_name: str, benchmark_version: str = "") -> str:
    """Return the leaderboard as a plain table, CSV, LaTeX or JSON text, as judged by the named judge
    (required: the API does not pick one, so a script's figures stay put when a judge is added)."""
    params: dict[str, Any] = {"judge": studio.one_named("judges/", judge_name, "judge")["id"]}
    if benchmark_version:
        params["version"] = benchmark_version
    if fmt in ("csv", "latex"):
        return studio.request("GET", f"leaderboard/{fmt}/", params=params).text
    board = studio.json("GET", "leaderboard/", params=params)
    if fmt == "json":
        import json

        return json.dumps(board, indent=2)
    return _plain_table(board)


def echomind_leaderboard(studio: Studio, fmt: str) -> str:
    """Return the EchoMind leaderboard as a plain table, CSV, LaTeX or JSON text."""
    if fmt in ("csv", "latex"):
        return studio.request("GET", f"echomind/leaderboard/{fmt}/").text
    board = studio.json("GET", "echomind/leaderboard/")
    if fmt == "json":
        import json

        return json.dumps(board, indent=2)

    def percent(value: float | None) -> str:
        return "not computed" if value is None else f"{100 * value:.1f}"

    def accuracy(figures: dict[str, Any]) -> str:
        return f"{percent(figures['rate'])} {figures['asked']}/{figures['expected']}"

    def covered(text: str, coverage: dict[str, int]) -> str:
        return f"{text} {coverage['n']}/{coverage['expected']}"

    headers = ["System", "Understanding %", "Reasoning %", "Unparsed", "WER %", "VES"]
    rows = [
        [
            row["system"],
            accuracy(row["understanding"]),
            accuracy(row["reasoning"]),
            str(row["understanding"]["unparsed"] + row["reasoning"]["unparsed"]),
            covered(percent(row["wer"]), row["wer_coverage"]),
            covered(
                "not computed" if row["replies"].get("ves") is None else f"{row['replies']['ves']:.2f}",
                row["reply_coverage"]["ves"],
            ),
        ]
        for row in board["rows"]
    ]
    notes = ["n/N: the rows behind a figure of those expected of every system."]
    return "\n".join([*_aligned(headers, rows), *notes]) + "\n"


def _aligned(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Return the header and rows as lines of left-aligned columns two spaces apart (each cell on
    one line, its control characters shown escaped: a name may hold any)."""
    headers = [visible(cell, keep="") for cell in headers]
    rows = [[visible(cell, keep="") for cell in row] for row in rows]
    widths = [max(len(line[index]) for line in [headers, *rows]) for index in range(len(headers))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [headers, *rows]
    ]


def _shown(cell: dict[str, Any]) -> str:
    """Return a leaderboard cell as "value[=][†] n/N": tied, not comparable, and what it stands on."""
    coverage = f"{cell['n_valid']}/{cell['n_expected']}"
    if cell["value"] is None:
        return f"- {coverage}"
    flags = ("=" if cell.get("tied") else "") + ("" if cell["comparable"] else NOT_COMPARABLE_MARK)
    return f"{_two_places(cell['value'])}{flags} {coverage}"


def _plain_table(board: dict[str, Any]) -> str:
    headers = [
        "System",
        *(f"{column['group']} {column['label']}" for column in board["columns"]),
        "Excluded",
    ]
    rows = [
        [
            row["system"],
            *(_shown(row["cells"][column["key"]]) for column in board["columns"]),
            str(row["excluded"]),
        ]
        for row in board["rows"]
    ]
    notes = [
        "Excluded: judge errors left out of the means. =: tied with another system.",
        "n/N: the valid judgements behind a figure of those expected of every system. " + NOT_COMPARABLE_NOTE,
        "Response Avg. (Content + Audio, out of 10) and All are - where audio was not judged.",
    ]
    head = visible(
        f"{board['benchmark_version']} judged by {board['judge']} (judge id {board['judge_id']})", keep=""
    )
    objective = _objective_table(board["objective_audio"]) if "objective_audio" in board else []
    return "\n".join([head, *_aligned(headers, rows), *notes, *objective]) + "\n"


def _objective_table(objective: dict[str, Any]) -> list[str]:
    """The leaderboard page's objective response-audio table, after a blank line, with each
    metric's scale under it (different scales, not one score)."""
    metrics = objective["metrics"]
    headers = ["System", "Judges' Audio (1-5)", *(metric["label"] for metric in metrics), "Measured"]
    rows = [
        [
            row["system"],
            f"{_two_places(row['judges_audio'])} {row['judges_audio_n_valid']}/{row['judges_audio_n_expected']}",
            *(_two_places(row["means"][metric["key"]]) for metric in metrics),
            f"{row['measured']} of {row['with_audio']}",
        ]
        for row in objective["rows"]
    ]
    return [
        "",
        "Objective response-audio metrics (measured from the audio by a job, not judged; means over"
        " the outputs measured):",
        *_aligned(headers, rows),
        *(f"{metric['label']}: {metric['scale']}" for metric in metrics),
    ]


def _two_places(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def export_gold(studio: Studio, split: str, fmt: str, output: IO[bytes] | None = None) -> int:
    """Stream the gold export of a split to `output` (stdout by default); return the bytes written."""
    target = output or sys.stdout.buffer
    written = 0
    params = {"split": split, "as": fmt}
    with studio.http.stream("GET", "gold/export/", params=params) as response:
        if response.is_error:
            response.read()
            studio.request("GET", "gold/export/", params=params)  # raises with the server's explanation
        with studio.bar(None, f"gold {split}") as bar:
            for chunk in response.iter_bytes():
                target.write(chunk)
                written += len(chunk)
                bar.update(len(chunk))
    target.flush()
    return written
