"""The ``regionbench`` command line: the parser of every command and ``main``. Each command lives
with its group (``build``, ``release``, ``scoring``, ``vocabulary``); this module only wires them."""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import NoReturn

from regionbench import __version__
from regionbench.cli import build, release, scoring, vocabulary
from regionbench.core import errors

# Each command imports what it uses when it runs: a call pays for its own work, not for every
# command's libraries (`regionbench --help` imports neither NumPy nor pyarrow).


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong, then where to read more (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; given ``argv``, only what parsing it needs (evaluate's task
    options, which import every task, only for an evaluate)."""
    command = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    p = Parser(prog="regionbench", description="Build, verify and evaluate region-annotated image benchmarks.")
    p.add_argument("--version", action="version", version=f"regionbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (
        build.add_synth,
        build.add_build,
        release.add_show,
        release.add_view,
        release.add_verify,
        release.add_diff,
        release.add_audit,
        release.add_challenge,
        build.add_reproduce,
        release.add_export,
        scoring.add_conformance,
        lambda sub: scoring.add_evaluate(sub, command in (None, "evaluate"), named_task(argv or [])),
        scoring.add_compare,
        scoring.add_concepts,
        scoring.add_baselines,
        vocabulary.add_hierarchy,
        vocabulary.add_vocabulary,
    ):
        add(sub)
    return p


def named_task(argv: list[str]) -> str | None:
    """The value of ``--task`` on a command line (``--task X`` or ``--task=X``): whose options
    ``evaluate --help`` shows."""
    for k, arg in enumerate(argv):
        if arg == "--task" and k + 1 < len(argv):
            return argv[k + 1]
        if arg.startswith("--task="):
            return arg.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    """Run a subcommand: 0 on success; a user-caused error (``errors.describe``) is one line
    per problem and exit 2; a bug shows its traceback, a request to report it, and exit 3."""
    argv = sys.argv[1:] if argv is None else argv
    args = parser(argv).parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("regionbench: interrupted; what finished is kept: run the same command again to resume", file=sys.stderr)
        return 130
    except Exception as exc:
        message = errors.describe(exc)
        if message is None:
            traceback.print_exc()
            print(errors.BUG_HINT, file=sys.stderr)
            return 3
        print(f"regionbench: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
