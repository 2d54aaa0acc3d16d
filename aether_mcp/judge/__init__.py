"""The server's judging code: the comparator, the input generators, shrinking, mutants and the static cheat rules.

Runs only in the server process; nothing here imports or runs agent code.
"""
