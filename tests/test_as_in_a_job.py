"""Every call the judge makes hands a vectorized candidate series a job's call could have been handed.

A candidate that can tell a judged call from a job's can be right only where it is judged. The judge's
mapInArrow batch holds row ids beside the arguments and names its columns for the UDF's parameters, and its
isolation calls the candidate on parts of a batch; a job's Arrow UDF gets a slice of one IPC message, its
columns named by Spark. Both sides make the series the same way (aether_mcp.arrow_udf.arguments: each column
copied into buffers of its own, no name) and call `evaluate` from the same function (arrow_udf.call). Here one
candidate describes, on every call, what it can see of its arguments besides their values (names, types,
index, whether each array owns its memory or views another, Arrow offsets and where the buffers come from, all
the way up) and which file called it, in real Spark: in a job's scalar and grouped Arrow UDFs, and in the
judge's batch calls, isolated parts, the call over the rows that return together, the audit's counting call
and its group calls. The descriptions must be the same. (Frames further up differ; the closed candidate
language refuses the stack levels that would reach them.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

CANDIDATE = textwrap.dedent(
    '''
    import json
    import sys
    import warnings

    import numpy as np
    import pandas as pd

    SEEN = []


    def _arrays(array):
        for name in ("_data", "_mask", "_ndarray"):
            value = getattr(array, name, None)
            if isinstance(value, np.ndarray):
                yield name, value


    def _described(s):
        parts = [type(s).__name__, repr(s.name), str(s.dtype), type(s.array).__name__, type(s.index).__name__]
        parts.append(repr((getattr(s.index, "start", None), getattr(s.index, "step", None), s.index.name, s.attrs, s.flags.allows_duplicate_labels)))
        arrays = [*_arrays(s.array)] + ([] if s.dtype == object or hasattr(s.array, "_pa_array") else [("to_numpy", s.to_numpy())])
        for name, value in arrays:  # (an object array of lists owns its memory or not by what the lists hold, in any world)
            base = value.base
            parts.append(f"{name}:{value.flags.owndata}:{value.flags.writeable}:{value.flags.c_contiguous}:{type(base).__name__}:{base is not None and getattr(base, 'size', None) == value.size}")
        chunked = getattr(s.array, "_pa_array", None)
        if chunked is not None:  # an Arrow-backed series: where its buffers come from, all the way up, and its bitmaps
            parts.append(repr([(chunk.offset, sorted({_provenance(buffer) for buffer in chunk.buffers() if buffer is not None}), _bitmaps(chunk)) for chunk in chunked.chunks]))
        return " ".join(parts)


    def _provenance(buffer):
        chain = []
        while buffer is not None:
            chain.append((buffer.is_mutable, buffer.address % 64 == 0))
            buffer = buffer.parent
        return tuple(chain)


    def _bitmaps(array):
        """Whether the array and its list values hold a validity bitmap exactly where they hold a null, as Arrow's IPC
        reader leaves a job's columns (a slice of a column with nulls elsewhere keeps one with none in it)."""
        here = (array.buffers()[0] is not None) == (array.null_count > 0)
        return here and (_bitmaps(array.values) if hasattr(array, "values") else True)


    def _caller():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.warn("who calls evaluate", stacklevel=3)
        return caught[0].filename.rsplit("/", 1)[-1]


    def _room(depth):
        try:
            return _room(depth + 1)
        except RecursionError:
            return depth


    def _json_room():
        low, high = 1, 5000
        while low < high:
            middle = (low + high + 1) // 2
            try:
                json.loads("[" * middle + "]" * middle)
                low = middle
            except RecursionError:
                high = middle - 1
        return low


    def _rooms():
        # how deep evaluate may recurse; the audit's step counter takes room of its own, and a candidate that behaves
        # otherwise while it is counted is caught by comparing counted and uncounted runs, so counted calls say nothing
        return "counted" if sys.gettrace() or sys.getprofile() else f"room {_room(0)} {_json_room()}"  # (read apart)


    def evaluate(*columns):
        SEEN.append(" / ".join(_described(column) for column in columns) + " called from " + _caller() + " " + _rooms())
        if (columns[0] == 3).any():
            raise ValueError("three")
        seen = "|".join(sorted(set(SEEN)))
        return ONE_VALUE
    '''
)
AGGREGATE = CANDIDATE.replace("ONE_VALUE", "seen")
CANDIDATE = CANDIDATE.replace("ONE_VALUE", "pd.Series([seen] * len(columns[0]))")

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    from pyspark.sql import SparkSession, functions as F
    from pyspark.sql.functions import ArrowUDFType
    from aether_mcp.confined import arrow_batches
    from aether_mcp.confined.arrow_batches import ROW_ID, OUTPUT, ERROR, EVENTS, AUDIT

    scalar, aggregate = open(sys.argv[1]).read(), open(sys.argv[2]).read()
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    rows = [(i, i % 2, None if i == 4 else i, None if i == 2 else f"s{i}", None if i == 6 else i / 2, None if i == 3 else [i, None] if i == 2 else [i], i % 3 == 0) for i in range(1, 17)]
    frame = spark.createDataFrame(rows, "id bigint, k bigint, n bigint, s string, x double, l array<bigint>, b boolean").coalesce(1)
    args = ["n", "s", "x", "l", "b"]
    seen = {}

    def lines(values):
        return sorted({line for value in values if value for line in value.split("|")})

    # a job: the Arrow UDFs a converted job and the timed runs call (without the rows on which the candidate raises)
    job = F.arrow_udf(arrow_batches.make_arrow_function(scalar, "job", sys.argv[1], "evaluate", pa.string()), "string", ArrowUDFType.SCALAR)
    seen["job"] = lines(row[0] for row in frame.where("n is null or n not in (3, 5)").select(job(*args)).collect())
    grouped = F.arrow_udf(arrow_batches.make_arrow_aggregate(aggregate, "job-group", sys.argv[2], "evaluate", pa.string()), "string", ArrowUDFType.GROUPED_AGG)
    seen["job group"] = lines(row[1] for row in frame.where("n is null or n not in (3, 5)").groupBy("k").agg(grouped(*args)).collect())

    # the judge: batches of 8 rows; the first holds rows that raise, so it is isolated, then the rows that return are
    # called together and (audit) counted; the second batch's own call returns what every call before it saw
    fields = "%s bigint, %s string, %s string, %s string" % (ROW_ID, OUTPUT, ERROR, EVENTS)
    mapper = arrow_batches.make_mapper(scalar, "judge", sys.argv[1], "evaluate", pa.string(), audit=True, lengths=[8, 8])
    judged = frame.select(F.col("id").alias(ROW_ID), *args).mapInArrow(mapper, fields + ", %s string" % AUDIT).collect()
    seen["judge"] = lines(row[1] for row in judged)
    seen["judge errors"] = sorted({row[2] for row in judged if row[2]})
    group_mapper = arrow_batches.make_group_mapper(aggregate, "judge-group", sys.argv[2], "evaluate", pa.string())
    seen["judge group"] = lines(row[1] for row in frame.select(F.col("k").alias(ROW_ID), *args).groupBy(ROW_ID).applyInArrow(group_mapper, fields).collect())
    print(json.dumps(seen))
    """
)


@pytest.mark.slow  # it starts Spark (in a subprocess of its own)
def test_the_judges_calls_hand_a_candidate_arguments_as_a_jobs_arrow_udfs_do(tmp_path):
    scalar, aggregate = tmp_path / "scalar.py", tmp_path / "aggregate.py"
    scalar.write_text(CANDIDATE)
    aggregate.write_text(AGGREGATE)
    # the quick compiler only: a short application whose outputs, not its speed, are compared
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_SUBMIT_ARGS": "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell"}
    ran = subprocess.run([sys.executable, "-c", SCRIPT, str(scalar), str(aggregate)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    # How deep evaluate could recurse is read apart: it moves by a level or two with how far the interpreter has
    # specialized the candidate's own recursion, in a job as when judged; the harness's frames moved it by many more.
    rooms = {world: [tuple(map(int, line.rsplit(" room ", 1)[1].split())) for line in seen[world] if " room " in line] for world in seen if world != "judge errors"}
    seen = {world: sorted({line.rsplit(" room ", 1)[0] for line in lines}) for world, lines in seen.items()}
    # the judge did isolate row 3 (halving down to it), then called the rows that return together and counted them
    assert seen["judge errors"] == ["ValueError: three"], seen["judge errors"]
    # one description in the job; Spark named the columns _0, _1, ... there, the series carry no name anywhere
    assert len(seen["job"]) == 1 and "Series None Int64" in seen["job"][0] and "'_0'" not in seen["job"][0], seen["job"]
    counted = [line for line in seen["judge"] if line.endswith(" counted")]
    assert counted == [seen["job"][0] + " counted"], counted  # the batch's own call and the count, under the step counter
    assert [line for line in seen["judge"] if not line.endswith(" counted")] == seen["job"], (seen["judge"], seen["job"])
    every = [room for world in rooms.values() for room in world]
    assert rooms["judge"] and rooms["job"] and all(max(room[i] for room in every) - min(room[i] for room in every) <= 2 for i in (0, 1)), rooms
    assert len(seen["job group"]) == 1 and seen["judge group"] == seen["job group"], (seen["judge group"], seen["job group"])


class _Measured(list):
    """A result whose own code measures the room where the harness handles it (its length, taken after evaluate)."""

    rooms: list[int] = []

    def __len__(self) -> int:
        if sys.gettrace() is None:
            _Measured.rooms.append(_room(0))
        return super().__len__()


def _room(depth: int) -> int:
    try:
        return _room(depth + 1)
    except RecursionError:
        return depth


def test_evaluate_and_what_handles_its_result_get_the_same_room_from_any_depth_and_a_tracer_survives_the_probe():
    # the room is found by recursing to RecursionError, which CPython answers by turning off a trace function that
    # raises: the harness puts it back, so the audit's step counter still counts the first call on a new stack
    import pyarrow as pa

    from aether_mcp import arrow_udf

    rooms, traced = [], []

    def evaluate(x):
        traced.append(sys.gettrace() is not None)
        if not traced[-1]:  # (a RecursionError of the candidate's own under a trace function would turn it off)
            rooms.append(_room(0))
        return _Measured(range(len(x)))

    def deeper(levels: int):
        return deeper(levels - 1) if levels else arrow_udf.run_on_arrow(evaluate, [pa.array([1, 2, 3])], pa.int64())

    def tracer(frame, event, arg):
        return None

    _Measured.rooms.clear()
    for levels in (0, 40, 200, 0):
        assert deeper(levels).to_pylist() == [0, 1, 2]
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        deeper(77)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(previous)
    assert traced == [False] * 4 + [True]
    # (within 2 levels: how far the interpreter has specialized the measuring recursion moves it by a level or so;
    # the stacks above moved it by as many levels as they are deep)
    assert max(rooms) - min(rooms) <= 2 and abs(rooms[0] - arrow_udf.EVALUATE_ROOM) <= 5, rooms
    each = len(_Measured.rooms) // 4  # (its length is taken in a few places on the way back, each the same in every call)
    calls = [_Measured.rooms[i * each : (i + 1) * each] for i in range(4)]
    assert each and all(max(room) - min(room) <= 2 for room in zip(*calls)), _Measured.rooms
