"""``python -m grader ASSIGNMENT …`` in the course directory: ``ppedu grade``'s work (ppedu's command runs this; the
options are ppedu's own, see ``ppedu grade --help``)."""

import argparse
import sys
from pathlib import Path

from grader.cli import grade
from ppedu.grading.cli import add_parser

parser = argparse.ArgumentParser(prog="ppedu")
add_parser(parser.add_subparsers())
arguments = parser.parse_args(["grade", *sys.argv[1:]])
try:
    sys.exit(grade(arguments, Path.cwd()))
except ValueError as error:
    parser.exit(2, f"ppedu: error: {error}\n")
