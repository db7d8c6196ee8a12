"""``python -m chatparse`` runs the CLI."""

import sys

from chatparse.cli.main import main

sys.exit(main())
