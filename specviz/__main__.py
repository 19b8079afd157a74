import sys

from specviz.cli import main

if __name__ == "__main__":  # not when a spawned child (measure/peer_process.py) imports it
    sys.exit(main())
