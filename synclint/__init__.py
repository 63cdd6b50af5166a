"""synclint: find and fix hidden GPU<->CPU synchronizations in PyTorch code."""

__version__ = "0.1.0"
