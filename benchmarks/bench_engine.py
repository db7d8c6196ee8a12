"""Engine benchmark script: chatparse vs transformers' reference parser, same run. See
``chatparse.benchmark`` for what is measured; ``--quick`` for a smoke run, ``--full`` for the slow
reference rows, ``--truncated-all`` for outputs of every built-in family cut by the token limit."""

import sys

from chatparse.benchmark import main

if __name__ == "__main__":
    sys.exit(main())
