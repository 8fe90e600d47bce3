import sys

try:  # Ctrl-C reaches every rank, one perhaps still starting: no traceback (the one line is main's or the launcher's)
    from ..cli.dualavg import main

    code = main()
except KeyboardInterrupt:
    code = 130
sys.exit(code)
