"""python -m kfuse doctor [--json] | --version"""

import argparse
import sys

from ._doctor import doctor
from ._version import __version__


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m kfuse",
        description="kfuse: fused optimizer steps and norms compiled at run "
                    "time")
    parser.add_argument("--version", action="version",
                        version=f"kfuse {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "doctor", help="report the installation and check that kfuse's "
                       "kernels compile (and run, on a GPU)")
    check.add_argument("--json", action="store_true",
                       help="the report as one JSON object")
    args = parser.parse_args(argv)
    report = doctor(as_json=args.json)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
