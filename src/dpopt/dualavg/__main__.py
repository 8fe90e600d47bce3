import sys

from ..cli.dualavg import main

sys.exit(main())
