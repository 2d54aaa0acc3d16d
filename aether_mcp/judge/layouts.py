"""How hidden rows are laid out for a candidate: partitions and Arrow batch sizes drawn across what jobs see.

A candidate that is right only at some batch lengths or partition counts is wrong in the job at
the others, so every comparison draws its layout afresh, widely: partition counts log-uniform
(from 1 to 32 for byte_compare; audit_candidate adds a run from 9 to 200, a job's shuffle
parallelism, since every partition is a Spark task of about 50 ms here), some of them empty, and
Arrow batch sizes log-uniform from 16 to 10,000, odd ones included, or the job's own size and its
neighbours. The
batch lengths a candidate then sees run from one row (a partition's last batch) to the batch
size; lengths 1 to 15 are also always seen by the test and edge rows, which run in tiny batches.
"""

from __future__ import annotations

import math
import random

MAX_PARTITIONS = 200
MAX_COMPARED_PARTITIONS = 32  # byte_compare's draws; the audit's wide run goes up to MAX_PARTITIONS
MIN_WIDE_PARTITIONS = 9  # above every layout the judge drew before it drew widely
MIN_DRAWN_BATCH = 16
MAX_DRAWN_BATCH = 10_000
JOB_BATCH_SHARE = 0.25  # layouts at the job's own batch size (or one row either side)
JOB_BATCH_DEFAULT = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch when the job does not set it
ARROW_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"


def job_batch(spark_conf: dict[str, str]) -> int:
    """The Arrow batch size the job runs with (its conf, else Spark's default)."""
    try:
        return max(1, int(spark_conf.get(ARROW_BATCH_CONF, JOB_BATCH_DEFAULT)))
    except ValueError:
        return JOB_BATCH_DEFAULT


def draw(rng: random.Random, job_batch: int, rows: int, fewest: int = 1, most: int = MAX_COMPARED_PARTITIONS) -> dict[str, int]:
    """A layout for `rows` rows: {"partitions", "empty_partitions", "max_records_per_batch"}, with
    between `fewest` and `most` partitions (never more than rows)."""
    partitions = _log_uniform(rng, min(fewest, max(1, rows)), min(most, max(1, rows)))
    empty = rng.choice((0, 0, 1, 3, max(1, partitions // 4)))
    if rng.random() < JOB_BATCH_SHARE:
        batch = max(1, job_batch + rng.choice((-1, 0, 1)))
    else:
        batch = _log_uniform(rng, MIN_DRAWN_BATCH, MAX_DRAWN_BATCH)
        if rng.random() < 0.5:
            batch |= 1  # odd sizes too
    return {"partitions": partitions, "empty_partitions": min(empty, 16), "max_records_per_batch": batch}


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    if high <= low:
        return low
    return min(high, max(low, int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))))


SWEEP_RATIO = 1.3  # each swept batch length about this many times the last, jittered


def sweep(rng: random.Random, longest: int) -> list[int]:
    """Batch lengths from 1 up to `longest`, each about 1.3 times the last (jittered per call), so
    that every range of lengths wider than a factor of about 1.6 holds at least one of them."""
    lengths, length = [], 1.0
    while length <= longest:
        lengths.append(int(length))
        length = max(length + 1, length * SWEEP_RATIO * rng.uniform(0.85, 1.15))
    if lengths[-1] != longest:
        lengths.append(longest)
    return lengths
