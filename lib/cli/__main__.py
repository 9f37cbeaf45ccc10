import sys

from lib.cli.main import main

sys.exit(main())
