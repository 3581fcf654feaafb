"""``python -m leap.server``."""
import sys

from .cli import main

sys.exit(main())
