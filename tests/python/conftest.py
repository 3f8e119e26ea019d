import os
import sys

# examples.py sits beside the tests; pytest's rootdir-relative imports need its folder on the path.
sys.path.insert(0, os.path.dirname(__file__))
