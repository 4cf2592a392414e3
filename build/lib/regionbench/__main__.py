import sys

from regionbench.cli import main

sys.exit(main())
