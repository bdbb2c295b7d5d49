import sys

from trnsim.sweep.cli import main

sys.exit(main())
