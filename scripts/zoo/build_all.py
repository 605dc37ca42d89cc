"""Regenerate the whole model zoo (models/*) and print a summary of each model.

Run from the repo root:  python scripts/zoo/build_all.py [name ...]
Each model script is run in its own process (so every one starts from the same
seeds); about a minute in total on 2 CPU cores.
"""

import os
import subprocess
import sys

import common

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["digits_cnn", "digits_lstm", "digits_gru", "mobile_tiny", "unet_tiny", "transformer_block"]


def main():
    names = sys.argv[1:] or MODELS
    for name in names:
        print(f"== {name}", flush=True)
        subprocess.run([sys.executable, os.path.join(HERE, f"{name}.py")], check=True)
    print("== summary")
    for name in names:
        print(name)
        common.describe(name)


if __name__ == "__main__":
    main()
