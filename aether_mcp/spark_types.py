"""Spark SQL type names: parse DDL type strings without a JVM and name types canonically.

`parse_type("array<decimal(10,2)>")` returns the pyspark DataType; `type_name(dt)` gives the
canonical DDL string stored in aether.toml (`DataType.simpleString()`). Unknown names raise
`UnknownSparkType` with the list of names that are understood.
"""

from __future__ import annotations

import re

from aether_mcp.lazy_import import lazy_module

T = lazy_module("pyspark.sql.types")


# DDL names of the types without parameters, mapped to their pyspark class names
SIMPLE_TYPES: dict[str, str] = {
    "boolean": "BooleanType",
    "bool": "BooleanType",
    "tinyint": "ByteType",
    "byte": "ByteType",
    "smallint": "ShortType",
    "short": "ShortType",
    "int": "IntegerType",
    "integer": "IntegerType",
    "bigint": "LongType",
    "long": "LongType",
    "float": "FloatType",
    "real": "FloatType",
    "double": "DoubleType",
    "string": "StringType",
    "binary": "BinaryType",
    "date": "DateType",
    "timestamp": "TimestampType",
    "timestamp_ltz": "TimestampType",
    "timestamp_ntz": "TimestampNTZType",
    "void": "NullType",
}

# DataType class names as they appear in source (`DoubleType()`), mapped to their DDL name.
TYPE_CLASS_NAMES: dict[str, str] = {
    "BooleanType": "boolean",
    "ByteType": "tinyint",
    "ShortType": "smallint",
    "IntegerType": "int",
    "LongType": "bigint",
    "FloatType": "float",
    "DoubleType": "double",
    "StringType": "string",
    "BinaryType": "binary",
    "DateType": "date",
    "TimestampType": "timestamp",
    "TimestampNTZType": "timestamp_ntz",
    "NullType": "void",
}

KNOWN_TYPE_NAMES = (
    "boolean, tinyint, smallint, int, bigint, float, double, decimal(p,s), string, binary, "
    "date, timestamp, timestamp_ntz, array<T>, map<K,V>, struct<name:T,...>"
)


class UnknownSparkType(ValueError):
    """A type string that is not a Spark SQL type this tool understands."""

    def __init__(self, text: str, detail: str = "") -> None:
        self.text = text
        extra = f" ({detail})" if detail else ""
        super().__init__(f"unknown Spark type {text!r}{extra}; known types: {KNOWN_TYPE_NAMES}")


def parse_type(text: str) -> T.DataType:
    """Parse a Spark DDL type name (case-insensitive) into a pyspark DataType."""
    parser = _TypeParser(text)
    result = parser.parse_type()
    parser.expect_end()
    return result


def type_name(data_type: T.DataType) -> str:
    """The canonical DDL name of a type (`int`, `decimal(10,2)`, `array<string>`)."""
    return data_type.simpleString()


_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+)|(?P<quoted>`(?:[^`]|``)*`)|(?P<punct>[<>(),:]))")


class _TypeParser:
    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text.strip():
            raise UnknownSparkType(str(text), "empty")
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            match = _TOKEN.match(stripped, pos)
            if not match or match.end() == pos:
                raise UnknownSparkType(text, f"unexpected character at position {pos}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.index = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, kind: str | None = None, value: str | None = None) -> str:
        token = self.peek()
        if token is None or (kind and token[0] != kind) or (value and token[1] != value):
            wanted = value or kind or "more"
            raise UnknownSparkType(self.text, f"expected {wanted!r}")
        self.index += 1
        return token[1]

    def expect_end(self) -> None:
        if self.peek() is not None:
            raise UnknownSparkType(self.text, f"unexpected {self.peek()[1]!r}")  # type: ignore[index]

    def parse_type(self) -> T.DataType:
        word = self.take("word").lower()
        if word in SIMPLE_TYPES:
            return getattr(T, SIMPLE_TYPES[word])()
        if word in ("decimal", "dec", "numeric"):
            if self.peek() == ("punct", "("):
                self.take("punct", "(")
                precision = int(self.take("number"))
                scale = 0
                if self.peek() == ("punct", ","):
                    self.take("punct", ",")
                    scale = int(self.take("number"))
                self.take("punct", ")")
                if not (1 <= precision <= 38 and 0 <= scale <= precision):
                    raise UnknownSparkType(self.text, "decimal precision must be 1..38 and scale 0..precision")
                return T.DecimalType(precision, scale)
            return T.DecimalType(10, 0)
        if word in ("varchar", "char"):
            self.take("punct", "(")
            self.take("number")
            self.take("punct", ")")
            return T.StringType()
        if word == "array":
            self.take("punct", "<")
            element = self.parse_type()
            self.take("punct", ">")
            return T.ArrayType(element, True)
        if word == "map":
            self.take("punct", "<")
            key = self.parse_type()
            self.take("punct", ",")
            value = self.parse_type()
            self.take("punct", ">")
            return T.MapType(key, value, True)
        if word == "struct":
            self.take("punct", "<")
            fields: list[T.StructField] = []
            while self.peek() != ("punct", ">"):
                if fields:
                    self.take("punct", ",")
                token = self.peek()
                if token is None:
                    break
                name = self.take(token[0])
                if token[0] == "quoted":
                    name = name[1:-1].replace("``", "`")
                if self.peek() == ("punct", ":"):
                    self.take("punct", ":")
                fields.append(T.StructField(name, self.parse_type(), True))
            self.take("punct", ">")
            return T.StructType(fields)
        raise UnknownSparkType(self.text)


# Scalar types whose values every tool generates, converts and compares; arrays, maps and structs
# of these, nested to any depth, are supported too (pyspark class names). `unsupported_part` is the one place that says so.
SUPPORTED_SCALARS = (
    "BooleanType",
    "ByteType",
    "ShortType",
    "IntegerType",
    "LongType",
    "FloatType",
    "DoubleType",
    "DecimalType",
    "StringType",
    "BinaryType",
    "DateType",
    "TimestampType",
)
_INTEGER_BOUNDS = {"ByteType": (-(2**7), 2**7 - 1), "ShortType": (-(2**15), 2**15 - 1), "IntegerType": (-(2**31), 2**31 - 1), "LongType": (-(2**63), 2**63 - 1)}


def integer_bounds() -> dict[type, tuple[int, int]]:
    """The smallest and largest value of each integral Spark type, by pyspark class."""
    return {getattr(T, name): bounds for name, bounds in _INTEGER_BOUNDS.items()}


SUPPORTED_TYPES_TEXT = (
    "boolean, tinyint, smallint, int, bigint, float, double, decimal(p,s), string, binary, date, timestamp, "
    "and array<T>, map<K,V> (K one of those), struct<name:T,...> of these, nested to any depth"
)


def unsupported_part(data_type: T.DataType) -> str | None:
    """The name of the first part of `data_type` the tools do not support (e.g. `timestamp_ntz`), or None.

    The single source of truth for what init_workspace accepts and every later tool handles.
    """
    if isinstance(data_type, T.ArrayType):
        return unsupported_part(data_type.elementType)
    if isinstance(data_type, T.MapType):
        if isinstance(data_type.keyType, (T.ArrayType, T.MapType, T.StructType)):
            return f"{data_type.simpleString()} (a map whose keys are {data_type.keyType.typeName()}s)"
        return unsupported_part(data_type.keyType) or unsupported_part(data_type.valueType)
    if isinstance(data_type, T.StructType):
        if not data_type.fields:
            return data_type.simpleString()
        names = [field.name for field in data_type.fields]
        if len(set(names)) != len(names):
            return f"{data_type.simpleString()} (a struct with duplicate field names)"
        return next((part for field in data_type.fields if (part := unsupported_part(field.dataType))), None)
    if isinstance(data_type, tuple(getattr(T, name) for name in SUPPORTED_SCALARS)):
        return None
    return data_type.simpleString()


def field_names(data_type: T.DataType) -> set[str]:
    """The names of every struct field inside `data_type`, at any depth: part of the UDF's declared contract."""
    if isinstance(data_type, T.StructType):
        return {f.name for f in data_type.fields}.union(*(field_names(f.dataType) for f in data_type.fields))
    if isinstance(data_type, T.ArrayType):
        return field_names(data_type.elementType)
    if isinstance(data_type, T.MapType):
        return field_names(data_type.keyType) | field_names(data_type.valueType)
    return set()
