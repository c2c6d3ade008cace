import sys

from ppedu.cli import main

sys.exit(main())
