"""Synthetic benchmark data for a UDF's arguments: realistic per type, deterministic for a seed.

Numbers spread over a range around the constants the original compares against (so every
branch sees traffic), with a share of exactly those constants; strings come from a Zipf-skewed
vocabulary of the original's literals with the case and padding variants real data has; each
column has nulls. Arrays, structs and maps are built from columns of their element, field, key
and value types drawn the same way (map keys distinct within a row). Columns are generated with NumPy in chunks and written as Parquet row groups
under .aether/data/, named by a digest of (types, spec, seed, rows), so the same request reuses
the same file. No agent code runs here.
"""

from __future__ import annotations

import decimal
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import call_scope
from aether_mcp.judge.mined_values import MinedValues, mine
from aether_mcp.lazy_import import lazy_module
from aether_mcp.spark_types import SUPPORTED_TYPES_TEXT, integer_bounds, parse_type
from aether_mcp.workspace import Workspace

np = lazy_module("numpy")
pa = lazy_module("pyarrow")
pq = lazy_module("pyarrow.parquet")
T = lazy_module("pyspark.sql.types")

GENERATOR_VERSION = 1
DATA_DIR = "data"
CHUNK_ROWS = 262_144
MAX_ROWS = 50_000_000
DEFAULT_SEED = 0
DEFAULT_NULL_RATE = 0.05
RAISE_REGIONS = "runs/raise_regions.json"  # under .aether/: what the latest byte_compare learned the original raises on
SPEC_KEYS = {"null_rate", "min", "max", "values"}

EPOCH_DAY_2000, EPOCH_DAY_2031 = 10_957, 22_281
MAX_ELEMENTS = 5  # per generated array
MAX_ENTRIES = 3  # per generated map
KEY_POOL = 64  # keys drawn once per chunk; each map takes distinct ones from them
Progress = Callable[[int, int | None, str], None]


class ColumnInfo(BaseModel):
    name: str
    type: str
    null_rate: float
    generated_from: str = Field(description="how the values are drawn")


class GenerateDataResult(BaseModel):
    path: str
    rows: int
    seed: int
    spec: dict[str, dict[str, Any]]
    columns: list[ColumnInfo]
    spec_used: dict[str, dict[str, Any]] = Field(default_factory=dict, description="the settings each column was drawn with: the spec given, else the job's literals, else what byte_compare learned the original raises on")
    spec_from: list[str] = Field(default_factory=list, description="why each setting not given in spec was chosen")
    reused: bool = Field(description="the same spec, seed and size existed already")
    size_bytes: int
    duration_s: float


def generate(workspace: Workspace, rows: int, seed: int | None = None, spec: dict[str, Any] | None = None, progress: Progress | None = None) -> GenerateDataResult:
    started = time.monotonic()
    if not 1 <= rows <= MAX_ROWS:
        raise ToolError(f"rows must be between 1 and {MAX_ROWS}.")
    seed = DEFAULT_SEED if seed is None else seed
    if not 0 <= seed < 2**63:
        raise ToolError("seed must be a non-negative integer below 2**63.")
    args = workspace.config.udf.args
    spec = _checked_spec(spec or {}, [a.name for a in args])
    used, reasons = effective_spec(workspace, spec)
    key = json.dumps({"v": GENERATOR_VERSION, "args": [[a.name, a.type] for a in args], "spec": used, "seed": seed, "rows": rows, "original": _original_digest(workspace)}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    folder = workspace.state_dir / DATA_DIR
    path = folder / f"{digest}.parquet"
    mined = mine(workspace.verified_original())
    columns = [_Column(a.name, parse_type(a.type), a.type, used.get(a.name, {}), mined) for a in args]
    infos = [c.info() for c in columns]
    if path.exists():
        return GenerateDataResult(path=str(path), rows=rows, seed=seed, spec=spec, spec_used=_shown(used), spec_from=reasons, columns=infos, reused=True, size_bytes=path.stat().st_size, duration_s=round(time.monotonic() - started, 3))
    report = progress or (lambda done, total, message: None)
    cancel = call_scope.cancel_event()
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{digest}.parquet.partial"
    schema = pa.schema([pa.field(c.name, c.arrow_type, nullable=True) for c in columns])
    with pq.ParquetWriter(partial, schema) as writer:
        for start in range(0, rows, CHUNK_ROWS):
            if cancel is not None and cancel.is_set():
                break
            size = min(CHUNK_ROWS, rows - start)
            rng = np.random.default_rng([seed, start])
            writer.write_table(pa.table([c.chunk(rng, size) for c in columns], schema=schema))
            report(start + size, rows, f"generated {start + size} of {rows} rows")
    if cancel is not None and cancel.is_set():
        partial.unlink(missing_ok=True)
        raise ToolError("generate_data was cancelled; nothing was kept. Call it again to generate the data.")
    partial.replace(path)
    (folder / f"{digest}.json").write_text(json.dumps({"rows": rows, "seed": seed, "spec": spec, "columns": [i.model_dump() for i in infos]}, indent=2))
    return GenerateDataResult(path=str(path), rows=rows, seed=seed, spec=spec, spec_used=_shown(used), spec_from=reasons, columns=infos, reused=False, size_bytes=path.stat().st_size, duration_s=round(time.monotonic() - started, 3))


def effective_spec(workspace: Workspace, spec: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per argument: the spec given; else the job's literals; else settings that avoid where the original raises.

    What the original raises on comes from the latest byte_compare (RAISE_REGIONS, written by the
    server): nulls in an argument whose null always raised get a null rate of 0, a sign that
    always raised is cut off by min or max, so the benchmark's original mode can run at all.
    """
    learned = _learned(workspace)
    used: dict[str, dict[str, Any]] = {}
    reasons: list[str] = []
    for arg in workspace.config.udf.args:
        if arg.name in spec:
            used[arg.name] = spec[arg.name]
        elif arg.values:
            used[arg.name] = {"values": list(arg.values), "null_rate": 0.0, "from_job": True}
            reasons.append(f"{arg.name}: only {', '.join(repr(v) for v in arg.values)}, as {arg.values_from}")
        else:
            settings, why = avoiding(parse_type(arg.type), learned.get(arg.name, {}))
            if settings:
                used[arg.name] = settings
                reasons.append(f"{arg.name}: {', '.join(f'{k}={v}' for k, v in settings.items())}, because {'; '.join(why)} (byte_compare)")
    return used, reasons


def _learned(workspace: Workspace) -> dict[str, dict[str, str]]:
    try:
        data = json.loads((workspace.state_dir / RAISE_REGIONS).read_text(encoding="utf-8"))
        return {str(item["arg"]): {str(f["feature"]): str(f["text"]) for f in item["features"]} for item in data["learned"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def avoiding(data_type: T.DataType, features: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    settings: dict[str, Any] = {}
    why: list[str] = []
    if "null" in features:
        settings["null_rate"] = 0.0
        why.append(features["null"])
    numeric = isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType))
    if numeric:
        step = 1 if type(data_type) in integer_bounds() else 10.0 ** -data_type.scale if isinstance(data_type, T.DecimalType) else 1e-6
        if "negative" in features and "positive" not in features:
            settings["min"] = step if "zero" in features else 0
            why += [features["negative"]] + ([features["zero"]] if "zero" in features else [])
        elif "positive" in features and "negative" not in features:
            settings["max"] = -step if "zero" in features else 0
            why += [features["positive"]] + ([features["zero"]] if "zero" in features else [])
    return settings, why


def _shown(used: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: {k: v for k, v in settings.items() if k != "from_job"} for name, settings in used.items()}


def _original_digest(workspace: Workspace) -> str:
    return hashlib.sha256(workspace.original_module.read_bytes()).hexdigest()[:16]


def _checked_spec(spec: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    example = '{"weight": {"min": 0.1, "max": 50, "null_rate": 0.01}, "tier": {"values": ["gold", "silver"]}}'
    if not isinstance(spec, dict):
        raise ToolError(f"spec must map argument names to settings, e.g. {example}.")
    checked: dict[str, dict[str, Any]] = {}
    for name, settings in sorted(spec.items()):
        if name not in names:
            raise ToolError(f"spec names {name!r}, which is not an argument; arguments: {', '.join(names)}.")
        if not isinstance(settings, dict) or not set(settings) <= SPEC_KEYS:
            raise ToolError(f"spec[{name!r}] may set only {', '.join(sorted(SPEC_KEYS))}, e.g. {example}.")
        rate = settings.get("null_rate", DEFAULT_NULL_RATE)
        if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ToolError(f"spec[{name!r}].null_rate must be between 0 and 1.")
        low, high = settings.get("min"), settings.get("max")
        for bound in (low, high):
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, float)) or not np.isfinite(bound)):
                raise ToolError(f"spec[{name!r}].min and .max must be finite numbers.")
        if low is not None and high is not None and low > high:
            raise ToolError(f"spec[{name!r}].min is above its max.")
        values = settings.get("values")
        if values is not None and (not isinstance(values, list) or not values or len(values) > 100_000):
            raise ToolError(f"spec[{name!r}].values must be a non-empty list (up to 100000 values) to draw from.")
        checked[name] = dict(sorted(settings.items()))
    return checked


class _Column:
    def __init__(self, name: str, data_type: T.DataType, type_text: str, settings: dict[str, Any], mined: MinedValues) -> None:
        self.name = name
        self.type = data_type
        self.type_text = type_text
        self.settings = settings
        self.null_rate = float(settings.get("null_rate", DEFAULT_NULL_RATE))
        self.arrow_type = _arrow_type(data_type, name)
        self.values = settings.get("values")
        if self.values is not None:
            try:
                pa.array(self.values, self.arrow_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
                raise ToolError(f"spec[{name!r}].values do not fit {type_text}: {exc}") from None
        self.constants = [v for v in (mined.compared_numbers or mined.numbers) if isinstance(v, (int, float))]
        self.vocabulary = _vocabulary(mined)
        self.low, self.high = self._range()
        # Nested types: one column per element, field, key and value, bounded by the same min and max.
        bounds = {key: settings[key] for key in ("min", "max") if key in settings}
        self.children: list[_Column] = []
        if isinstance(data_type, T.ArrayType):
            self.children = [_Column(f"{name}[]", data_type.elementType, data_type.elementType.simpleString(), bounds, mined)]
        elif isinstance(data_type, T.StructType):
            self.children = [_Column(f"{name}.{f.name}", f.dataType, f.dataType.simpleString(), bounds, mined) for f in data_type.fields]
        elif isinstance(data_type, T.MapType):
            keys = _Column(f"{name} key", data_type.keyType, data_type.keyType.simpleString(), {**bounds, "null_rate": 0.0}, mined)
            self.children = [keys, _Column(f"{name} value", data_type.valueType, data_type.valueType.simpleString(), bounds, mined)]

    def info(self) -> ColumnInfo:
        if self.values is not None and self.settings.get("from_job"):
            how = f"only the job's literal{'s' if len(self.values) > 1 else ''} {', '.join(repr(v) for v in self.values)} (every call passes one)"
        elif self.values is not None:
            how = f"uniform over {len(self.values)} given values"
        elif isinstance(self.type, T.StringType | T.BinaryType):
            how = f"Zipf-skewed over {len(self.vocabulary)} words from the original's literals, with case and padding variants"
        elif isinstance(self.type, T.BooleanType):
            how = "true or false, evenly"
        elif isinstance(self.type, T.ArrayType):
            how = f"0 to {MAX_ELEMENTS} elements, each {self.children[0].info().generated_from}"
        elif isinstance(self.type, T.StructType):
            how = "; ".join(f"{f.name}: {child.info().generated_from}" for f, child in zip(self.type.fields, self.children))
        elif isinstance(self.type, T.MapType):
            how = f"0 to {MAX_ENTRIES} entries with distinct keys; keys {self.children[0].info().generated_from}; values {self.children[1].info().generated_from}"
        else:
            how = f"70% uniform in [{self.low}, {self.high}], 30% the original's compared constants"
        return ColumnInfo(name=self.name, type=self.type_text, null_rate=self.null_rate, generated_from=how)

    def _range(self) -> tuple[float, float]:
        if "min" in self.settings or "max" in self.settings:
            low = self.settings.get("min", self.settings.get("max", 0) - 100)
            high = self.settings.get("max", low + 100)
            return low, high
        if isinstance(self.type, (T.DateType, T.TimestampType)):
            return EPOCH_DAY_2000, EPOCH_DAY_2031
        if self.constants:
            low, high = min(self.constants), max(self.constants)
            span = max(high - low, abs(high), 1)
            low, high = low - span / 2, high + span / 2
        else:
            low, high = 0, 1000
        if type(self.type) in integer_bounds():
            lo, hi = integer_bounds()[type(self.type)]
            low, high = max(int(np.floor(low)), lo), min(int(np.ceil(high)), hi)
        return low, high

    def chunk(self, rng: np.random.Generator, size: int) -> pa.Array:
        mask = rng.random(size) < self.null_rate
        if self.values is not None:
            picks = rng.integers(0, len(self.values), size)
            return pa.array([None if m else self.values[i] for i, m in zip(picks, mask)], self.arrow_type)
        kind = self.type
        if self.children:
            return self._nested(rng, size, mask)
        if isinstance(kind, T.BooleanType):
            return pa.array(rng.random(size) < 0.5, mask=mask)
        if isinstance(kind, (T.StringType, T.BinaryType)):
            words = np.array(self.vocabulary, dtype=object)
            weights = 1.0 / np.arange(1, len(words) + 1) ** 1.1  # Zipf: a few labels dominate, a long tail follows
            values = words[rng.choice(len(words), size, p=weights / weights.sum())]
            if isinstance(kind, T.BinaryType):
                values = np.array([v.encode("utf-8") for v in values], dtype=object)
            return pa.array(values, self.arrow_type, mask=mask)
        numbers = self._numbers(rng, size)
        if type(kind) in integer_bounds():
            return pa.array(np.rint(numbers).astype(np.int64), mask=mask).cast(self.arrow_type)
        if isinstance(kind, T.DoubleType):
            return pa.array(numbers, pa.float64(), mask=mask)
        if isinstance(kind, T.FloatType):
            return pa.array(numbers.astype(np.float32), pa.float32(), mask=mask)
        if isinstance(kind, T.DecimalType):
            quantum = decimal.Decimal(1).scaleb(-kind.scale)
            limit = decimal.Decimal(10) ** (kind.precision - kind.scale) - quantum
            values = [None if m else max(-limit, min(limit, decimal.Decimal(repr(float(v))).quantize(quantum))) for v, m in zip(numbers, mask)]
            return pa.array(values, self.arrow_type)
        if isinstance(kind, T.DateType):
            return pa.array(np.rint(numbers).astype(np.int32), mask=mask).cast(pa.date32())
        if isinstance(kind, T.TimestampType):
            micros = (numbers * 86_400_000_000).astype(np.int64)
            return pa.array(micros, mask=mask).cast(self.arrow_type)
        raise ToolError(f"argument {self.name!r} has type {self.type_text}, which benchmark data does not generate yet; pass spec values for it.")

    def _nested(self, rng: np.random.Generator, size: int, mask: np.ndarray) -> pa.Array:
        nulls = pa.array(mask)
        if isinstance(self.type, T.StructType):
            fields = list(self.arrow_type)
            return pa.StructArray.from_arrays([child.chunk(rng, size) for child in self.children], fields=fields, mask=nulls)
        if isinstance(self.type, T.ArrayType):
            lengths = np.where(mask, 0, rng.integers(0, MAX_ELEMENTS + 1, size))
            offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
            return pa.ListArray.from_arrays(offsets, self.children[0].chunk(rng, int(lengths.sum())), type=self.arrow_type, mask=nulls)
        # A map's keys within a row must differ: each row takes a run of consecutive keys from a pool of distinct ones.
        keys, items = self.children
        pool = _distinct(keys.chunk(rng, KEY_POOL))
        lengths = np.where(mask, 0, rng.integers(0, min(MAX_ENTRIES, len(pool)) + 1, size))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        starts = np.repeat(rng.integers(0, max(1, len(pool)), size), lengths)
        positions = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], lengths)
        chosen = pool.take(pa.array((starts + positions) % max(1, len(pool)))) if len(pool) else pool
        return pa.MapArray.from_arrays(pa.array(offsets), chosen, items.chunk(rng, int(offsets[-1])), type=self.arrow_type, mask=nulls)

    def _numbers(self, rng: np.random.Generator, size: int) -> np.ndarray:
        numbers = rng.uniform(self.low, self.high, size)
        calendar = isinstance(self.type, (T.DateType, T.TimestampType))
        if self.constants and not calendar and "min" not in self.settings and "max" not in self.settings:
            use_constant = rng.random(size) < 0.3
            numbers = np.where(use_constant, np.array(self.constants, dtype=np.float64)[rng.integers(0, len(self.constants), size)], numbers)
        return numbers


def _distinct(keys: pa.Array) -> pa.Array:
    """The distinct non-null keys of a generated pool, NaN and -0.0 left out (the comparison's map keys)."""
    values = [value for value in dict.fromkeys(_arrow_key(v) for v in keys.to_pylist() if v is not None) if value is not None]
    return pa.array(values, keys.type)


def _arrow_key(value: Any) -> Any:
    if isinstance(value, float) and (value != value or (value == 0 and np.signbit(value))):
        return None
    return value


def _vocabulary(mined: MinedValues) -> list[str]:
    words: dict[str, None] = {}
    for text in mined.strings[:200]:
        for variant in (text, text.upper(), text.title(), f" {text}", f"{text} ", text.lower()):
            words[variant] = None
    for filler in ("", "n/a", "unknown", "other", "misc"):
        words[filler] = None
    return list(words)


def _arrow_type(data_type: T.DataType, name: str) -> pa.DataType:
    if isinstance(data_type, T.BooleanType):
        return pa.bool_()
    if isinstance(data_type, T.ByteType):
        return pa.int8()
    if isinstance(data_type, T.ShortType):
        return pa.int16()
    if isinstance(data_type, T.IntegerType):
        return pa.int32()
    if isinstance(data_type, T.LongType):
        return pa.int64()
    if isinstance(data_type, T.FloatType):
        return pa.float32()
    if isinstance(data_type, T.DoubleType):
        return pa.float64()
    if isinstance(data_type, T.DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    if isinstance(data_type, T.StringType):
        return pa.string()
    if isinstance(data_type, T.BinaryType):
        return pa.binary()
    if isinstance(data_type, T.DateType):
        return pa.date32()
    if isinstance(data_type, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(data_type, T.ArrayType):
        return pa.list_(_arrow_type(data_type.elementType, name))
    if isinstance(data_type, T.StructType):
        return pa.struct([pa.field(f.name, _arrow_type(f.dataType, name)) for f in data_type.fields])
    if isinstance(data_type, T.MapType):
        return pa.map_(_arrow_type(data_type.keyType, name), _arrow_type(data_type.valueType, name))
    raise ToolError(
        f"argument {name!r} has type {data_type.simpleString()}, which benchmark data does not generate yet "
        f"(supported: {SUPPORTED_TYPES_TEXT}); byte_compare and audit_candidate still work for this UDF."
    )
