"""A Spark failure is shown by its cause, not by the call that carried it.

The stage failure and the parse failure are as PySpark 4.3 raised them here; the withColumn failure is
written in the form py4j gives a Java exception with its causes. test_protocol sees a real one end to end.
"""

from aether_mcp.evaluation.spark_errors import explain


class Py4JJavaError(Exception):
    """Stands for py4j's class: what `explain` reads is the text, which py4j builds from the Java stack trace."""


WITH_COLUMN = """An error occurred while calling o9604.withColumn.
: org.apache.spark.SparkException: [INTERNAL_ERROR] The Spark Connect planner could not convert the expression. SQLSTATE: XX000
\tat org.apache.spark.SparkException$.internalError(SparkException.scala:107)
\tat org.apache.spark.sql.classic.Dataset.withColumns(Dataset.scala:1790)
Caused by: org.apache.spark.sql.connect.common.InvalidPlanInput: Expression with ID: 0 is not supported
\tat org.apache.spark.sql.connect.planner.SparkConnectPlanner.transformExpression(SparkConnectPlanner.scala:1620)
\t... 24 more
Caused by: java.lang.IllegalArgumentException: the lambda variable x is not bound
\tat org.apache.spark.sql.connect.planner.SparkConnectPlanner.transformUnresolvedNamedLambdaVariable(SparkConnectPlanner.scala:1702)
\t... 31 more
"""

STAGE_FAILURE = """An error occurred while calling o133.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 9.0 failed 1 times, most recent failure: Lost task 0.0 in stage 9.0 (TID 9) (192.0.2.2 executor driver): java.util.IllegalFormatConversionException: d != java.lang.Double
\tat java.base/java.util.Formatter$FormatSpecifier.failConversion(Formatter.java:4515)
\tat org.apache.spark.sql.catalyst.expressions.FormatString.eval(stringExpressions.scala:2146)
"""

PYTHON_WORKER = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/tmp/ws/candidate/fee.py", line 9, in evaluate
    return weight / 0
ZeroDivisionError: float division by zero
"""


def test_a_jvm_failure_through_py4j_names_its_innermost_cause_not_the_call():
    text = explain(Py4JJavaError(WITH_COLUMN))
    assert "o9604.withColumn" not in text
    assert text.startswith("org.apache.spark.SparkException: [INTERNAL_ERROR] The Spark Connect planner could not convert")
    assert text.endswith("(caused by java.lang.IllegalArgumentException: the lambda variable x is not bound)")
    assert len(text) <= 600


def test_a_task_failure_is_said_as_the_task_raised_it():
    assert explain(Py4JJavaError(STAGE_FAILURE)) == "a Spark task failed: java.util.IllegalFormatConversionException: d != java.lang.Double"


def test_a_python_workers_failure_is_the_python_exception():
    assert explain(RuntimeError(PYTHON_WORKER)) == "ZeroDivisionError: float division by zero"


def test_a_failure_of_one_line_is_kept_and_named_on_request():
    error = ValueError("\n[UNSUPPORTED_DATATYPE] Unsupported data type \"NONEXISTENT_TYPE\". SQLSTATE: 0A000 (line 1, pos 0)\n\n== SQL ==\nnonexistent_type\n^^^\n")
    assert explain(error) == '[UNSUPPORTED_DATATYPE] Unsupported data type "NONEXISTENT_TYPE". SQLSTATE: 0A000 (line 1, pos 0)'
    assert explain(error, named=True).startswith("ValueError: [UNSUPPORTED_DATATYPE]")
    assert explain(KeyError()) == "KeyError"
    assert len(explain(ValueError("x" * 5000))) == 600
