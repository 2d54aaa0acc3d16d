"""What runs inside confined processes, next to agent code: the candidate worker's side, Spark's Python
workers, the test plugin, the benchmark and profiling children, and the watch.

Nothing here is trusted by the server: every result from these processes is data the server checks.
"""
