"""Code that runs user and agent code: Spark workers, the test plugin, the comparator, processes."""
