import sys

from trnsim.fuzz.cli import main

sys.exit(main())
