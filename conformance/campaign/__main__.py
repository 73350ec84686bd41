"""Entry point for ``python -m isrcheck.conformance.campaign`` and for ``spark-submit`` (give it
this file's path): the same arguments as ``isrcheck fuzz``."""
import sys

from isrcheck.conformance.cli import main

if __name__ == "__main__":
    sys.exit(main(["fuzz", *sys.argv[1:]]))
