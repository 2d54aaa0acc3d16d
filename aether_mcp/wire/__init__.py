"""What crosses process boundaries: tagged JSON values and the worker socket protocol (never pickles)."""
