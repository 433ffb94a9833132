"""`python -m webapp.client COMMAND ...` (also installed as `echostudio`): see `--help`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from webapp.client import commands
from webapp.client.session import ClientError, Studio
from webapp.lib.visible import visible


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="echostudio", description="Script EchoStudio through its REST API.")
    main.add_argument("--url", help="Server address (default $ECHOSTUDIO_URL or http://127.0.0.1:8000)")
    main.add_argument("--token", help="Personal API token (default $ECHOSTUDIO_TOKEN)")
    main.add_argument("--quiet", action="store_true", help="No progress bars")
    sub = main.add_subparsers(dest="command", required=True)

    system = sub.add_parser("register-system", help="Register a system (kept if it exists)")
    system.add_argument("name")
    system.add_argument("--category", default="general", choices=["general", "empathy", "omni", "ours"])
    system.add_argument("--version", default="", help="Version or checkpoint")
    system.add_argument("--text-only", action="store_true")

    submit = sub.add_parser("submit-outputs", help="Upload a system's outputs")
    submit.add_argument("path", type=Path, help="A zip with one .jsonl and the audio, or a .jsonl file")
    submit.add_argument("--system", required=True)
    submit.add_argument("--audio-zip", type=Path)
    submit.add_argument("--s3-prefix", default="")
    submit.add_argument("--benchmark-version", default="")
    submit.add_argument("--skip-invalid-rows", action="store_true")

    judge = sub.add_parser("judge", help="Judge a system's outputs")
    judge.add_argument("--system", required=True)
    judge.add_argument("--judge", required=True, help="Judge configuration name")
    judge.add_argument("--benchmark-version", default="")
    judge.add_argument("--retry-errors", action="store_true")
    judge.add_argument(
        "--wait",
        action="store_true",
        help="Follow the run until it ends; exit 0 only when every stage was judged (see --allow-errors)",
    )
    judge.add_argument(
        "--allow-errors",
        action="store_true",
        help="With --wait, exit 0 for a run that finished with errors too (a failed one still exits 2)",
    )

    board = sub.add_parser("leaderboard", help="Print the leaderboard")
    board.add_argument("--format", default="table", choices=["table", "csv", "latex", "json"])
    board.add_argument("--benchmark-version", default="")
    board.add_argument(
        "--judge", required=True, help="The judge whose figures to print (required: no silent default)"
    )

    echomind = sub.add_parser("echomind-leaderboard", help="Print the EchoMind leaderboard")
    echomind.add_argument("--format", default="table", choices=["table", "csv", "latex", "json"])

    gold = sub.add_parser("export-gold", help="Download the gold references of a split")
    gold.add_argument("--split", required=True)
    gold.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"])
    gold.add_argument("-o", "--output", type=Path, help="File to write (default: standard output)")
    return main


def say(text: str, stream: TextIO | None = None) -> None:
    """Write text for a terminal: every control character a name or message may hold shown escaped
    (`webapp.lib.visible`), so printing a system name never drives the terminal. The gold export's
    bytes are a file's, written as they are."""
    (stream or sys.stdout).write(visible(text))


def run(argv: list[str] | None = None) -> int:
    """Run one command; return the exit status (`commands.wait_exit_status`; 1 when the server refused)."""
    args = parser().parse_args(argv)
    try:
        studio = Studio(args.url, args.token, quiet=args.quiet)
        if args.command == "register-system":
            say(
                json.dumps(
                    commands.register_system(studio, args.name, args.category, args.version, args.text_only)
                )
                + "\n"
            )
        elif args.command == "submit-outputs":
            report = commands.submit_outputs(
                studio,
                args.system,
                args.path,
                audio_zip=args.audio_zip,
                s3_prefix=args.s3_prefix,
                benchmark_version=args.benchmark_version,
                skip_invalid_rows=args.skip_invalid_rows,
            )
            say(json.dumps(report) + "\n")
        elif args.command == "judge":
            run_row = commands.judge(
                studio,
                args.system,
                args.judge,
                benchmark_version=args.benchmark_version,
                retry_errors=args.retry_errors,
                wait=args.wait,
            )
            say(json.dumps(run_row) + "\n")
            if args.wait:
                for line in (run_row.get("summary"), run_row.get("rerun")):
                    if line:
                        say(line + "\n", sys.stderr)
                return commands.wait_exit_status(
                    run_row.get("status") or run_row["job"]["status"], allow_errors=args.allow_errors
                )
        elif args.command == "leaderboard":
            say(
                commands.leaderboard(
                    studio, args.format, benchmark_version=args.benchmark_version, judge_name=args.judge
                )
            )
        elif args.command == "echomind-leaderboard":
            say(commands.echomind_leaderboard(studio, args.format))
        elif args.command == "export-gold":
            if args.output:
                with args.output.open("wb") as handle:
                    commands.export_gold(studio, args.split, args.format, handle)
            else:
                commands.export_gold(studio, args.split, args.format)
    except ClientError as refused:
        say(f"{refused}\n", sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run())
