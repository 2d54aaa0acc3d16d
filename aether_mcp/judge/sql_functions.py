"""Which Catalyst expressions a sql candidate may be made of: deterministic, context-free ones only.

An allow-list, not a list of forbidden spellings: the expression classes of Spark's built-in
functions (as registered in Spark 4's function registry, each reviewed), less those whose value
depends on where or when the row is computed, plus the structural expressions every plan holds
(column references, aliases, literals, casts, CASE, struct and collection access, lambdas). A
class this list does not know, a new function of a later Spark or a Python UDF, is refused with
its name until it is reviewed and added. The audit reads the classes from the candidate's
analyzed plan, so `F.expr("current_timestamp()")` and `F.current_timestamp()` are the same
class, whatever the spelling.
"""

from __future__ import annotations

# Expressions whose value is not a function of the row's own arguments: what each depends on.
CONTEXT: dict[str, str] = {
    "AesDecrypt": "a key passed at run time",
    "AesEncrypt": "a random initialisation vector",
    "CallMethodViaReflection": "any JVM method",
    "CurrentCatalog": "the session's catalog",
    "CurrentDatabase": "the session's database",
    "CurrentDate": "the current date",
    "CurrentTime": "the current time",
    "CurrentTimeZone": "the session's time zone",
    "CurrentTimestamp": "the current time",
    "CurrentUser": "the user running the job",
    "InputFileBlockLength": "the file a row was read from",
    "InputFileBlockStart": "the file a row was read from",
    "InputFileName": "the file a row was read from",
    "LocalTimestamp": "the current time",
    "MonotonicallyIncreasingID": "the partition and position a row is in",
    "Now": "the current time",
    "Rand": "a random number",
    "RandStr": "a random string",
    "Randn": "a random number",
    "Shuffle": "a random order",
    "SparkPartitionID": "the partition a row is in",
    "SparkVersion": "the Spark version",
    "TryAesDecrypt": "a key passed at run time",
    "TryReflect": "any JVM method",
    "Uniform": "a random number",
    "Uuid": "a random UUID",
}

# The classes built-in functions analyse to (Spark 4's registry, less CONTEXT).
BUILT_IN = frozenset(
    {
        "Abs", "Acos", "Acosh", "Add", "AddMonths", "And", "AnyValue", "ApproxTopK", "ApproxTopKAccumulate",
        "ApproxTopKCombine", "ApproxTopKEstimate", "ApproximatePercentile", "ArrayAggregate", "ArrayAppend", "ArrayCompact",
        "ArrayContains", "ArrayDistinct", "ArrayExcept", "ArrayExists", "ArrayFilter", "ArrayForAll", "ArrayInsert",
        "ArrayIntersect", "ArrayJoin", "ArrayMax", "ArrayMin", "ArrayPosition", "ArrayPrepend", "ArrayRemove",
        "ArrayRepeat", "ArraySize", "ArraySort", "ArrayTransform", "ArrayUnion", "ArraysOverlap", "ArraysZip", "Ascii",
        "Asin", "Asinh", "AssertTrue", "Atan", "Atan2", "Atanh", "Average", "BRound", "Base32", "Base64", "Between", "Bin",
        "BitAndAgg", "BitLength", "BitOrAgg", "BitXorAgg", "BitmapAndAgg", "BitmapBitPosition", "BitmapBucketNumber",
        "BitmapConstructAgg", "BitmapCount", "BitmapOrAgg", "BitwiseAnd", "BitwiseCount", "BitwiseGet", "BitwiseNot",
        "BitwiseOr", "BitwiseXor", "BoolAnd", "BoolOr", "CaseWhen", "Cast", "Cbrt", "CeilExpressionBuilder", "Chr",
        "Coalesce", "CollateExpressionBuilder", "Collation", "CollectList", "CollectSet", "CollectUnion", "Concat",
        "ConcatWs", "ContainsExpressionBuilder", "Conv", "ConvertTimezone", "Corr", "Cos", "Cosh", "Cot", "Count",
        "CountIf", "CountMinSketchAggExpressionBuilder", "CounterDiffExpressionBuilder", "CovPopulation", "CovSample",
        "Crc32", "CreateArray", "CreateMap", "CreateNamedStruct", "Csc", "CsvToStructs", "CumeDist", "CurrentPath",
        "DateAdd", "DateDiff", "DateFormatClass", "DateFromUnixDate", "DatePartExpressionBuilder", "DateSub", "DayName",
        "DayOfMonth", "DayOfWeek", "DayOfYear", "Decode", "DenseRank", "Divide", "ElementAt", "Elt", "Encode",
        "EndsWithExpressionBuilder", "EqualNull", "EqualNullSafe", "EqualTo", "EulerNumber", "Exp",
        "ExplodeExpressionBuilder", "Expm1", "Extract", "Factorial", "FindInSet", "First", "Flatten",
        "FloorExpressionBuilder", "FormatNumber", "FormatString", "FromAvro", "FromProtobuf", "FromUTCTimestamp",
        "FromUnixTime", "Get", "GetJsonObject", "GreaterThan", "GreaterThanOrEqual", "Greatest", "Grouping", "GroupingID",
        "Hex", "HistogramNumeric", "HllSketchAgg", "HllSketchEstimate", "HllUnion", "HllUnionAgg", "Hmac",
        "HourExpressionBuilder", "HyperLogLogPlusPlus", "Hypot", "ILike", "If", "In", "InitCap", "InlineExpressionBuilder",
        "IntegralDivide", "IsNaN", "IsNotNull", "IsNull", "IsValidUTF8", "IsValidVariant", "IsVariantNull", "JaroWinkler",
        "JsonObjectKeys", "JsonToStructs", "JsonTuple", "KllMergeAggBigint", "KllMergeAggDouble", "KllMergeAggFloat",
        "KllSketchAggBigint", "KllSketchAggDouble", "KllSketchAggFloat", "KllSketchGetNBigint", "KllSketchGetNDouble",
        "KllSketchGetNFloat", "KllSketchGetQuantileBigint", "KllSketchGetQuantileDouble", "KllSketchGetQuantileFloat",
        "KllSketchGetRankBigint", "KllSketchGetRankDouble", "KllSketchGetRankFloat", "KllSketchMergeBigint",
        "KllSketchMergeDouble", "KllSketchMergeFloat", "KllSketchToStringBigint", "KllSketchToStringDouble",
        "KllSketchToStringFloat", "Kurtosis", "LPadExpressionBuilder", "Lag", "Last", "LastDay", "Lead", "Least", "Left",
        "Length", "LengthOfJsonArray", "LessThan", "LessThanOrEqual", "Levenshtein", "Like", "ListAgg", "Log", "Log10",
        "Log1p", "Log2", "Logarithm", "Lower", "Luhncheck", "MakeDTInterval", "MakeDate", "MakeInterval", "MakeTime",
        "MakeTimestampExpressionBuilder", "MakeTimestampLTZExpressionBuilder", "MakeTimestampNTZExpressionBuilder",
        "MakeValidUTF8", "MakeYMInterval", "MapConcat", "MapContainsKey", "MapEntries", "MapFilter", "MapFromArrays",
        "MapFromEntries", "MapKeys", "MapValues", "MapZipWith", "MaskExpressionBuilder", "Max", "MaxByBuilder", "Md5",
        "Measure", "Median", "MicrosToTimestamp", "MillisToTimestamp", "Min", "MinByBuilder", "MinuteExpressionBuilder",
        "ModeBuilder", "Month", "MonthName", "MonthsBetween", "Multiply", "Murmur3Hash", "NTile", "NaNvl",
        "NanosToTimestamp", "NextDay", "Not", "NthValue", "NullIf", "NullIfZero", "Nvl", "Nvl2", "OctetLength", "Or",
        "Overlay", "ParseJsonExpressionBuilder", "ParseToDate", "ParseToTimestamp", "ParseToTimestampLTZExpressionBuilder",
        "ParseToTimestampNTZExpressionBuilder", "ParseUrl", "PercentRank", "Percentile", "PercentileContBuilder",
        "PercentileDiscBuilder", "Pi", "Pmod", "PosExplodeExpressionBuilder", "Pow", "Quarter", "Quote", "RLike",
        "RPadExpressionBuilder", "RaiseErrorExpressionBuilder", "Rank", "RegExpCount", "RegExpExtract", "RegExpExtractAll",
        "RegExpInStr", "RegExpReplace", "RegExpSubStr", "RegrAvgX", "RegrAvgY", "RegrCount", "RegrIntercept", "RegrR2",
        "RegrSXX", "RegrSXY", "RegrSYY", "RegrSlope", "Remainder", "Reverse", "Right", "Rint", "Round", "RowNumber",
        "ST_AsBinary", "ST_GeogFromWKB", "ST_GeomFromWKB", "ST_SetSrid", "ST_Srid", "SchemaOfAvro", "SchemaOfCsv",
        "SchemaOfJson", "SchemaOfVariant", "SchemaOfVariantAgg", "SchemaOfXml", "Sec", "SecondExpressionBuilder",
        "SecondsToTimestamp", "Sentences", "Sequence", "SessionWindow", "Sha1", "Sha2", "ShiftLeft", "ShiftRight",
        "ShiftRightUnsigned", "Signum", "Sin", "Sinh", "Size", "Skewness", "Slice", "SortArray", "SoundEx", "SplitPart",
        "Sqrt", "Stack", "StartsWithExpressionBuilder", "StddevPop", "StddevSamp", "StringInstrExpressionBuilder",
        "StringLocate", "StringRepeat", "StringReplace", "StringSpace", "StringSplit", "StringToMap", "StringTranslate",
        "StringTrim", "StringTrimBoth", "StringTrimLeft", "StringTrimRight", "StructsToCsv", "StructsToJson",
        "StructsToXml", "Substring", "SubstringIndex", "Subtract", "Sum", "Tan", "Tanh", "ThetaDifference",
        "ThetaIntersection", "ThetaIntersectionAgg", "ThetaSketchAgg", "ThetaSketchEstimate", "ThetaUnion", "ThetaUnionAgg",
        "TimeBucketExpressionBuilder", "TimeDiff", "TimeFromMicros", "TimeFromMillis", "TimeFromSeconds", "TimeToMicros",
        "TimeToMillis", "TimeToSeconds", "TimeTrunc", "TimeWindow", "ToAvro", "ToBinary", "ToCharacterBuilder", "ToDegrees",
        "ToNumber", "ToProtobuf", "ToRadians", "ToTime", "ToUTCTimestamp", "ToUnixTimestamp", "ToVariantObject",
        "TransformKeys", "TransformValues", "TruncDate", "TruncTimestamp", "TryAdd", "TryAverageExpressionBuilder",
        "TryDivide", "TryElementAt", "TryMakeInterval", "TryMakeTimestampExpressionBuilder",
        "TryMakeTimestampLTZExpressionBuilder", "TryMakeTimestampNTZExpressionBuilder", "TryMod", "TryMultiply",
        "TryParseJsonExpressionBuilder", "TryParseUrl", "TrySubtract", "TrySumExpressionBuilder", "TryToBinary",
        "TryToDateExpressionBuilder", "TryToNumber", "TryToTimeExpressionBuilder", "TryToTimestampExpressionBuilder",
        "TryUrlDecode", "TryValidateUTF8", "TryVariantArrayAppendExpressionBuilder", "TryVariantGetExpressionBuilder",
        "TryVariantInsertExpressionBuilder", "TryVariantSetExpressionBuilder", "TupleDifferenceDouble",
        "TupleDifferenceInteger", "TupleDifferenceThetaDouble", "TupleDifferenceThetaInteger", "TupleIntersectionAggDouble",
        "TupleIntersectionAggInteger", "TupleIntersectionDouble", "TupleIntersectionInteger",
        "TupleIntersectionThetaDouble", "TupleIntersectionThetaInteger", "TupleSketchAggDoubleExpressionBuilder",
        "TupleSketchAggIntegerExpressionBuilder", "TupleSketchEstimateDouble", "TupleSketchEstimateInteger",
        "TupleSketchSummaryDouble", "TupleSketchSummaryInteger", "TupleSketchThetaDouble", "TupleSketchThetaInteger",
        "TupleUnionAggDoubleExpressionBuilder", "TupleUnionAggIntegerExpressionBuilder",
        "TupleUnionDoubleExpressionBuilder", "TupleUnionIntegerExpressionBuilder", "TupleUnionThetaDoubleExpressionBuilder",
        "TupleUnionThetaIntegerExpressionBuilder", "TypeOf", "UnBase32", "UnBase64", "UnaryMinus", "UnaryPositive", "Unhex",
        "UnixDate", "UnixMicros", "UnixMillis", "UnixNanos", "UnixSeconds", "UnixTimestamp", "Upper", "UrlDecode",
        "UrlEncode", "ValidateUTF8", "VariancePop", "VarianceSamp", "VariantArrayAppendExpressionBuilder", "VariantDelete",
        "VariantGetExpressionBuilder", "VariantInsertExpressionBuilder", "VariantSetExpressionBuilder",
        "VariantStripNullsExpressionBuilder", "VectorAvg", "VectorCosineSimilarity", "VectorInnerProduct",
        "VectorL2Distance", "VectorNorm", "VectorNormalize", "VectorSum", "WeekDay", "WeekOfYear", "WidthBucket",
        "WindowTime", "XPathBoolean", "XPathDouble", "XPathFloat", "XPathInt", "XPathList", "XPathLong", "XPathShort",
        "XPathString", "XmlToStructs", "XxHash64", "Year", "ZeroIfNull", "ZipWith"
    }
)

# What the registry's expression builders build (a builder class is registered in their place).
BUILT_BY_BUILDERS = frozenset(
    {
        "Average", "Ceil", "Collate", "Contains", "CountMinSketchAgg", "CounterDiff", "DatePart", "EndsWith", "Explode",
        "Extract", "Floor", "GetTimestamp", "Hour", "Inline", "LPad", "MakeTimestamp", "MakeTimestampLTZ",
        "MakeTimestampNTZ", "Mask", "MaxBy", "MinBy", "Minute", "Mode", "ParseJson", "ParseToTimestamp",
        "ParseToTimestampLTZ", "ParseToTimestampNTZ", "PercentileCont", "PercentileDisc", "PosExplode", "RPad",
        "RaiseError", "RoundCeil", "RoundFloor", "Second", "StartsWith", "StringInstr", "StringLPad", "StringRPad", "Sum",
        "TimeBucket", "ToCharacter", "TryAverage", "TryMakeTimestamp", "TryMakeTimestampLTZ", "TryMakeTimestampNTZ",
        "TryParseJson", "TrySum", "TryToDate", "TryToTime", "TryToTimestamp", "TryVariantArrayAppend", "TryVariantGet",
        "TryVariantInsert", "TryVariantSet", "TupleSketchAggDouble", "TupleSketchAggInteger", "TupleUnionAggDouble",
        "TupleUnionAggInteger", "TupleUnionDouble", "TupleUnionInteger", "TupleUnionThetaDouble", "TupleUnionThetaInteger",
        "VariantArrayAppend", "VariantGet", "VariantInsert", "VariantSet", "VariantStripNulls"
    }
)

# Expressions plans hold that no function name registers.
STRUCTURAL = frozenset(
    {
        "Alias", "AttributeReference", "Literal", "Cast", "CaseWhen", "If", "Coalesce", "In", "InSet", "IsNull", "IsNotNull",
        "Not", "And", "Or", "EqualTo", "EqualNullSafe", "GetStructField", "GetArrayItem", "GetMapValue", "GetArrayStructFields",
        "UnresolvedExtractValue", "ExtractValue", "CreateNamedStruct", "CreateArray", "CreateMap", "LambdaFunction",
        "NamedLambdaVariable", "KnownNullable", "KnownNotNull", "KnownFloatingPointNormalized", "CheckOverflow", "PromotePrecision",
        "SortOrder", "AggregateExpression", "UnaryMinus", "UnaryPositive", "TryEval", "AssertNotNull",
    }
)


def refused(classes: list[str]) -> list[tuple[str, str]]:
    """(class, why) for each expression class a sql candidate may not use, in the order given."""
    found = []
    for name in dict.fromkeys(classes):
        if name in CONTEXT:
            found.append((name, f"depends on {CONTEXT[name]}, which differs between the judged run and the job"))
        elif name not in BUILT_IN and name not in BUILT_BY_BUILDERS and name not in STRUCTURAL:
            found.append((name, "is not on the allow-list of deterministic, context-free expressions (a UDF, or a function not reviewed yet)"))
    return found


def spellings(name: str) -> list[str]:
    """Lower-case words a candidate's source may spell an expression class with (its function names)."""
    words = {name.lower()}
    words |= {function for function, cls in _FUNCTION_NAMES.items() if cls == name}
    return sorted(words)


# Function names of the context expressions, for pointing at the line that spells one.
_FUNCTION_NAMES = {
    "current_timestamp": "CurrentTimestamp", "now": "Now", "localtimestamp": "LocalTimestamp", "current_date": "CurrentDate",
    "curdate": "CurrentDate", "current_time": "CurrentTime", "current_timezone": "CurrentTimeZone", "current_user": "CurrentUser",
    "user": "CurrentUser", "session_user": "CurrentUser", "current_database": "CurrentDatabase", "current_schema": "CurrentDatabase",
    "current_catalog": "CurrentCatalog", "version": "SparkVersion", "rand": "Rand", "randn": "Randn", "random": "Rand",
    "uniform": "Uniform", "randstr": "RandStr", "uuid": "Uuid", "shuffle": "Shuffle", "spark_partition_id": "SparkPartitionID",
    "monotonically_increasing_id": "MonotonicallyIncreasingID", "input_file_name": "InputFileName", "reflect": "CallMethodViaReflection",
    "java_method": "CallMethodViaReflection", "try_reflect": "TryReflect", "aes_encrypt": "AesEncrypt", "aes_decrypt": "AesDecrypt",
    "try_aes_decrypt": "TryAesDecrypt", "udf": "PythonUDF", "pandas_udf": "PythonUDF",
}
