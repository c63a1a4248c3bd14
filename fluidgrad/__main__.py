"""`python -m fluidgrad ...` runs the `fluidgrad` command."""
import sys

from .cli import main

sys.exit(main())
