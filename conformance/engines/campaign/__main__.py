"""Entry point for ``python -m isrcheck.conformance.engines.campaign`` and for ``spark-submit`` (give it
this file's path): the same arguments as ``isrcheck fuzz``."""

import os
import sys

# Run as a script (spark-submit), Python puts this folder first on sys.path, where its module
# names would shadow others; the package is imported from the installation instead.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)

from isrcheck.conformance.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["fuzz", *sys.argv[1:]]))
