"""Evaluating a target through a real SparkSession, shared by the reference and the candidate workers."""
