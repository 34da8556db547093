"""Test-suite settings: one torch thread (the tests' networks are tiny, and spinning
intra-op threads on a loaded 2-core machine slow everything down many times)."""

import os
import sys

import torch

torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")  # for subprocesses the tests start
sys.path.insert(0, os.path.dirname(__file__))  # tests import their helpers (ttt_solver)
