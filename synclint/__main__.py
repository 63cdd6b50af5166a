import sys

from synclint.cli import entry_point

sys.exit(entry_point())
