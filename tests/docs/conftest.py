import os
import sys

# The page reader and runner are plain modules beside the tests.
sys.path.insert(0, os.path.dirname(__file__))
