"""Python expressions to Column code with Python's semantics: the operators, builtins, methods and calls of the subset."""

from __future__ import annotations

import ast
import math
import operator

from aether_mcp.drafting.module import DecimalConst, DecimalContext, Table, decimal_quantum, refuse_unknown_name, undefined
from aether_mcp.drafting.recipes import PY_WHITESPACE
from aether_mcp.drafting.values import Guard, Refused, Value, both, constant, negate, py_literal, within

ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
FOLD = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}  # fmt: skip
INT_OPS = {ast.Add: "try_add", ast.Sub: "try_subtract", ast.Mult: "try_multiply"}
ORDER = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
TYPE_NAMES = {"int": "int", "float": "float", "str": "str", "bool": "bool", "none": "NoneType", "match": "re.Match", "date": "datetime.date", "datetime": "datetime.datetime", "wall": "datetime.datetime (parsed)"}
# What a date or a datetime argument offers: its parts, as Spark reads them from the same wall time.
DATE_PARTS = {"year": "year", "month": "month", "day": "dayofmonth"}
TIME_PARTS = {**DATE_PARTS, "hour": "hour", "minute": "minute", "second": "second"}
# math functions Spark computes on the JVM a last bit away from C's libm on some inputs: drafted, with a deviation to declare.
ULP_MATH = {"exp": "exp", "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "expm1": "expm1", "log1p": "log1p"}
INF = 'F.lit(float("inf"))'


def raising(message: str) -> Value:
    """A value Python never gets: evaluating it raises on every row that reaches it."""
    return Value("F.lit(None)", "none", True, (Guard("F.lit(True)", message),))


def always_raises(value: Value) -> bool:
    return any(g.condition == "F.lit(True)" for g in value.guards)


def number(value: Value) -> bool:
    return value.kind in ("int", "float", "bool")


def as_float(value: Value) -> Value:
    if value.kind == "float":
        return value
    if value.is_const:
        try:
            return constant(float(value.const), 0)  # type: ignore[arg-type]
        except OverflowError:
            return Value("F.lit(None)", "none", True, (Guard("F.lit(True)", "OverflowError: int too large to convert to float"),))
    return Value(f"({value.code}).cast('double')", "float", value.nullable, value.guards)


def as_int(value: Value) -> Value:
    if value.kind != "bool":
        return value
    if value.is_const:
        return constant(int(value.const), 0)  # type: ignore[call-overload]
    return Value(f"({value.code}).cast('long')", "int", value.nullable, value.guards)


class Expressions:
    """Mixed into the scope: each method takes an AST node and returns a Value."""

    def expr(self, node: ast.expr) -> Value:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise Refused(f"the expression `{ast.unparse(node)[:80]}` ({type(node).__name__})", node.lineno)
        return method(node)

    # --- names and constants -------------------------------------------------

    def _Constant(self, node: ast.Constant) -> Value:
        return constant(node.value, node.lineno)

    def _Name(self, node: ast.Name) -> Value:
        if node.id in self.env:
            return self.env[node.id]
        if node.id in self.unbound:
            raise Refused(f"`{node.id}` is assigned on some paths only (UnboundLocalError on the others)", node.lineno)
        if node.id in self.assigned:  # a local of the function, read before it is assigned on this path
            return raising(f"UnboundLocalError: local variable '{node.id}' referenced before assignment (line {node.lineno})")
        if node.id in self.module.constants:
            return constant(self.module.constants[node.id], node.lineno)
        named = self.imported(node)
        if named and named.startswith("math.") and named.split(".")[1] in ("pi", "e", "inf", "nan", "tau"):
            return constant(getattr(math, named.split(".")[1]), node.lineno)
        if undefined(self.module, node.id):
            return raising(f"NameError: name '{node.id}' is not defined (line {node.lineno})")
        raise refuse_unknown_name(self.module, node.id, node.lineno)

    def _Attribute(self, node: ast.Attribute) -> Value:
        if self.imported(node.value) == "math" and node.attr in ("pi", "e", "inf", "nan", "tau"):
            return constant(getattr(math, node.attr), node.lineno)
        if isinstance(node.value, ast.Name) and node.value.id not in self.env and node.attr in self.module.namespaces.get(node.value.id, {}):
            return self.expr(self.module.namespaces[node.value.id][node.attr])  # settings.MIN_AGE: a constant of a job's module
        target = self.expr(node.value)
        parts = {"date": DATE_PARTS, "datetime": TIME_PARTS, "wall": TIME_PARTS}.get(target.kind, {})
        if node.attr in parts:
            target = self.need_object(target, node.attr, node.lineno)
            if target.kind == "datetime":
                self.local_time(node.lineno)
            return Value(f"F.{parts[node.attr]}({target.code}).cast('long')", "int", False, target.guards)
        raise Refused(f"the attribute `{ast.unparse(node)[:80]}`", node.lineno)

    # --- operators -----------------------------------------------------------

    def need(self, value: Value, what: str, line: int) -> Value:
        """The value where Python needs it not None: a None raises TypeError there."""
        if value.kind == "none":
            return Value("F.lit(None)", "none", True, (*value.guards, Guard("F.lit(True)", f"TypeError: {what} on None (line {line})")))
        if not value.nullable:
            return value
        guard = Guard(f"{value.code}.isNull()", f"TypeError: {what} on None (line {line})", value.name)
        return Value(value.code, value.kind, False, (*value.guards, guard), name=value.name)

    def need_object(self, value: Value, attribute: str, line: int) -> Value:
        """The value where Python reads an attribute or calls a method of it: on None, AttributeError."""
        message = f"AttributeError: 'NoneType' object has no attribute '{attribute}' (line {line})"
        if value.kind == "none":
            return Value("F.lit(None)", "none", True, (*value.guards, Guard("F.lit(True)", message)))
        if not value.nullable:
            return value
        return Value(value.code, value.kind, False, (*value.guards, Guard(f"{value.code}.isNull()", message, value.name)), name=value.name)

    def local_time(self, line: int) -> None:
        self.notes.add(
            f"a timestamp's parts (line {line}) are read in the session time zone: a row-at-a-time UDF sees the Python worker's zone (TZ), "
            "which the judge sets to the session's; where the job's workers run in another zone, read them with "
            "F.hour(F.convert_timezone(None, F.lit(worker_tz), ts)) (notes, section 17)"
        )

    def _BinOp(self, node: ast.BinOp) -> Value:
        op = type(node.op)
        if op not in ARITHMETIC:
            raise Refused(f"the operator `{ast.unparse(node)[:80]}`", node.lineno)
        left, right = self.expr(node.left), self.expr(node.right)
        return self.arithmetic(op, left, right, node.lineno)

    def arithmetic(self, op: type, left: Value, right: Value, line: int) -> Value:
        symbol = ARITHMETIC[op]
        if always_raises(left) or always_raises(right):  # Python never gets past an operand that raises
            return Value("F.lit(None)", "none", True, left.guards + right.guards)
        foldable = (number(left) and number(right)) or (op is ast.Add and left.kind == right.kind == "str")
        huge = op is ast.Pow and isinstance(right.const, int) and abs(right.const) > 4096  # 2 ** 10**10 is never computed here
        if left.is_const and right.is_const and foldable and not huge:
            try:
                return constant(FOLD[op](left.const, right.const), line)
            except (ArithmeticError, TypeError, ValueError) as exc:
                return Value("F.lit(None)", "none", True, (Guard("F.lit(True)", f"{type(exc).__name__}: {exc} (line {line})"),))
        if left.kind == "str" and right.kind == "str" and op is ast.Add:
            left, right = self.need(left, "+", line), self.need(right, "+", line)
            return Value(f"F.concat({left.code}, {right.code})", "str", False, left.guards + right.guards)
        if not (number(left) and number(right)):
            raise Refused(f"`{symbol}` between {TYPE_NAMES[left.kind]} and {TYPE_NAMES[right.kind]}", line)
        left, right = self.need(as_int(left), f"`{symbol}`", line), self.need(as_int(right), f"`{symbol}`", line)
        guards = left.guards + right.guards
        floats = "float" in (left.kind, right.kind) or op is ast.Div
        if op is ast.Div and left.kind == right.kind == "int" and not (left.is_const and right.is_const):
            self.notes.add(f"int / int (line {line}) divides the two as doubles: past 2**53 Python's exact quotient can differ in the last bit")
        if floats:
            left, right = as_float(left), as_float(right)
            guards = left.guards + right.guards
            if always_raises(left) or always_raises(right):  # an int too large for a float
                return Value("F.lit(None)", "none", True, guards)
        a, b = left.code, right.code
        if op in (ast.Div, ast.FloorDiv, ast.Mod):
            guards += (Guard(f"({b}) == 0", f"ZeroDivisionError: {'division' if op is ast.Div else 'integer division or modulo'} by zero (line {line})"),)
        if op is ast.Pow:
            return self.power(left, right, guards, line)
        if op in (ast.Add, ast.Sub, ast.Mult) and not floats:
            self.wide_ints(line)
            return Value(f"F.{INT_OPS[op]}({a}, {b})", "int", False, guards)  # never None in Python: null here is past 64 bits
        if op is ast.Div:  # try_divide: a step is computed on every row, and the zero divisor is a guard's
            return Value(f"F.try_divide({a}, {b})", "float", False, guards)
        if op in (ast.Add, ast.Sub, ast.Mult):
            return Value(f"({a} {symbol} {b})", "float", False, guards)
        recipe = {(ast.Mod, False): "_py_int_mod", (ast.Mod, True): "_py_float_mod", (ast.FloorDiv, False): "_py_int_floordiv", (ast.FloorDiv, True): "_py_float_floordiv"}[(op, floats)]
        self.use(recipe)
        return Value(f"{recipe}({a}, {b})", "float" if floats else "int", False, guards)

    def wide_ints(self, line: int) -> None:
        self.notes.add(f"int arithmetic (first at line {line}) is 64-bit in Spark: beyond it the draft gives null (try_add, try_multiply, ...), as Spark keeps a Python int that large when the UDF returns it")

    def power(self, left: Value, right: Value, guards: tuple[Guard, ...], line: int) -> Value:
        if left.kind == "int" and right.is_const and isinstance(right.const, int) and not isinstance(right.const, bool) and 1 <= right.const <= 4:
            self.wide_ints(line)
            code = left.code
            for _ in range(right.const - 1):
                code = f"F.try_multiply({code}, {left.code})"
            return Value(code, "int", False, guards)
        raise Refused(
            "`**` other than an int to a literal power 1 to 4 (a float's x ** 2 is C's pow(), which differs from x * x and from Spark's pow() in the last bit on some inputs)",
            line,
            "write it by hand with a declared ULP deviation (record_deviation), or pick the vectorized target",
        )

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            truth = self.truth(operand, node.lineno)
            if truth.is_const:
                return constant(not truth.const, node.lineno)
            return Value(negate(truth.code), "bool", False, truth.guards)
        if isinstance(node.op, ast.Invert):
            raise Refused(f"the bitwise `~` of `{ast.unparse(node)[:40]}`", node.lineno)
        if operand.is_const:
            return constant(-operand.const if isinstance(node.op, ast.USub) else +operand.const, node.lineno)  # type: ignore[operator]
        if not number(operand):
            raise Refused(f"unary `{ast.unparse(node)[:40]}` on {TYPE_NAMES[operand.kind]}", node.lineno)
        operand = self.need(as_int(operand), "unary minus", node.lineno)
        if not isinstance(node.op, ast.USub):
            return operand
        if operand.kind == "int":
            self.wide_ints(node.lineno)
            return Value(f"F.try_subtract(F.lit(0), {operand.code})", "int", False, operand.guards)
        return Value(f"(-{operand.code})", operand.kind, False, operand.guards)

    def truth(self, value: Value, line: int) -> Value:
        """Python's bool(value) as a non-null boolean Column (None, 0, 0.0, '' are false; NaN is true)."""
        if value.is_const and not value.guards:
            return constant(bool(value.const), line)
        if value.is_const:
            return Value(f"F.lit({bool(value.const)})", "bool", False, value.guards)
        if value.kind == "none":  # a value that raises on every row reaching it
            return Value("F.lit(False)", "bool", False, value.guards)
        test = {"bool": f"{value.code}", "match": value.code, "date": f"{value.code}.isNotNull()", "datetime": f"{value.code}.isNotNull()", "wall": f"{value.code}.isNotNull()", "int": f"({value.code} != 0)", "float": f"({value.code} != 0)", "str": f"(F.length({value.code}) > 0)"}[value.kind]
        code = f"F.coalesce({test}, F.lit(False))" if value.nullable else test
        return Value(code, "bool", False, value.guards)

    def _BoolOp(self, node: ast.BoolOp) -> Value:
        is_and = isinstance(node.op, ast.And)
        result = self.expr(node.values[0])
        saved = dict(self.env)
        try:
            for later in node.values[1:]:
                self.narrow(node.values[node.values.index(later) - 1], is_and)
                right = self.expr(later)
                result = self.short_circuit(result, right, is_and, later.lineno)
        finally:
            self.env = saved
        return result

    def short_circuit(self, left: Value, right: Value, is_and: bool, line: int) -> Value:
        truth = self.truth(left, line)
        if truth.is_const:
            return (right if truth.const else left) if is_and else (left if truth.const else right)
        if left.kind == right.kind == "bool" and not left.nullable and not right.nullable:
            code = f"({left.code} {'&' if is_and else '|'} {right.code})"
            rhs = within(right.guards, truth.code if is_and else negate(truth.code))
            return Value(code, "bool", False, left.guards + rhs)
        kind = self.merge_kind(left, right, line)
        left = self.bind(left, "either") if not left.guards else left  # used twice below: one step, not two copies
        truth = self.truth(left, line) if not left.guards else truth
        take_right = truth.code if is_and else negate(truth.code)
        code = f"F.when({take_right}, {right.code}).otherwise({left.code})"
        return Value(code, kind, left.nullable or right.nullable, truth.guards + within(right.guards, take_right))

    def merge_kind(self, a: Value, b: Value, line: int) -> str:
        if a.kind == b.kind or b.kind == "none":
            return a.kind
        if a.kind == "none":
            return b.kind
        raise Refused(f"a value that is {TYPE_NAMES[a.kind]} on one path and {TYPE_NAMES[b.kind]} on another", line)

    def _IfExp(self, node: ast.IfExp) -> Value:
        test = self.truth(self.expr(node.test), node.lineno)
        if test.is_const:
            return self.expr(node.body if test.const else node.orelse)
        saved = dict(self.env)
        self.narrow(node.test, True)
        body = self.expr(node.body)
        self.env = dict(saved)
        self.narrow(node.test, False)
        orelse = self.expr(node.orelse)
        self.env = saved
        kind = self.merge_kind(body, orelse, node.lineno)
        guards = test.guards + within(body.guards, test.code) + within(orelse.guards, negate(test.code))
        return Value(f"F.when({test.code}, {body.code}).otherwise({orelse.code})", kind, body.nullable or orelse.nullable, guards)

    # --- comparisons -----------------------------------------------------------

    def _Compare(self, node: ast.Compare) -> Value:
        left = self.expr(node.left)
        parts: list[Value] = []
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.comparand(right_node, op)
            parts.append(self.compare(op, left, right, right_node))
            left = right if isinstance(right, Value) else left
        result = parts[0]
        for part in parts[1:]:
            result = self.short_circuit(result, part, True, node.lineno)
        return result

    def comparand(self, node: ast.expr, op: ast.cmpop) -> Value | Table | list[Value]:
        if isinstance(op, ast.In | ast.NotIn):
            if isinstance(node, ast.Name) and node.id in self.module.tables and node.id not in self.env:
                return self.module.tables[node.id]
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                try:
                    values = [ast.literal_eval(e) for e in node.elts]
                except ValueError:
                    return [self.expr(e) for e in node.elts]  # x in (a, b): x == a or x == b, in order
                return Table("literal", tuple((v, None) for v in values), False, node.lineno)
        return self.expr(node)

    def compare(self, op: ast.cmpop, left: Value, right: Value | Table | list[Value], node: ast.expr) -> Value:
        line = node.lineno
        if always_raises(left) or (isinstance(right, Value) and always_raises(right)):
            return Value("F.lit(False)", "bool", False, left.guards + (right.guards if isinstance(right, Value) else ()))
        if isinstance(right, list):
            found = constant(False, line)
            for element in right:  # the tuple is built, every element evaluated, before the test
                found = self.short_circuit(found, self.equality(left.pure(), element.pure(), True, line), False, line)
            found = Value(found.code, "bool", False, left.guards + tuple(g for e in right for g in e.guards) + found.guards)
            return Value(negate(found.code), "bool", False, found.guards) if isinstance(op, ast.NotIn) else found
        if isinstance(right, Table):
            found = self.member(left, right, line)
            return Value(negate(found.code), "bool", False, found.guards) if isinstance(op, ast.NotIn) else found
        if isinstance(op, ast.In | ast.NotIn):
            if left.kind != "str" or right.kind != "str":
                raise Refused(f"`in` with {TYPE_NAMES[right.kind]} on the right (only a literal collection, a literal table or a string)", line)
            left, right = self.need(left, "`in`", line), self.need(right, "`in`", line)
            found = f"{right.code}.contains({left.code})"  # a substring, '' in every string
            return Value(found if isinstance(op, ast.In) else negate(found), "bool", False, left.guards + right.guards)
        if isinstance(op, ast.Is | ast.IsNot):
            if not (right.kind == "none" and right.is_const):
                raise Refused("`is` with something other than None", line)
            is_none = "F.lit(True)" if left.kind == "none" else (f"{left.code}.isNull()" if left.nullable else "F.lit(False)")
            code = is_none if isinstance(op, ast.Is) else negate(is_none)
            return Value(code, "bool", False, left.guards)
        if left.is_const and right.is_const and type(op) in FOLD:
            return constant(FOLD[type(op)](left.const, right.const), line)
        if isinstance(op, ast.Eq | ast.NotEq):
            return self.equality(left, right, isinstance(op, ast.Eq), line)
        if type(op) not in ORDER:
            raise Refused(f"the comparison `{type(op).__name__}`", line)
        symbol = ORDER[type(op)]
        left, right = self.need(as_int(left), f"`{symbol}`", line), self.need(as_int(right), f"`{symbol}`", line)
        guards = left.guards + right.guards
        if left.kind == right.kind == "str":
            return Value(f"({left.code} {symbol} {right.code})", "bool", False, guards)
        if not (number(left) and number(right)):
            raise Refused(f"`{symbol}` between {TYPE_NAMES[left.kind]} and {TYPE_NAMES[right.kind]} (TypeError on every row)", line)
        if {left.kind, right.kind} == {"int", "float"} and not (left.is_const or right.is_const):
            self.notes.add(f"`{symbol}` between an int and a float (line {line}) compares them as doubles: past 2**53 Python's exact comparison can differ")
        nan_checks = [f"~F.isnan({v.code})" for v in (left, right) if v.kind == "float" and not (v.is_const and v.const == v.const)]
        return Value(both(f"({left.code} {symbol} {right.code})", *nan_checks), "bool", False, guards)

    def equality(self, left: Value, right: Value, equal: bool, line: int) -> Value:
        guards = left.guards + right.guards
        if "none" in (left.kind, right.kind):
            other = right if left.kind == "none" else left
            is_none = f"{other.code}.isNull()" if other.nullable else ("F.lit(True)" if other.kind == "none" else "F.lit(False)")
            return Value(is_none if equal else negate(is_none), "bool", False, guards)
        if number(left) != number(right) or (not number(left) and left.kind != right.kind):
            return Value(f"F.lit({not equal})", "bool", False, guards)  # 1 == "1" is False in Python; the operands still raise where they do
        left, right = as_int(left), as_int(right)
        if "float" in (left.kind, right.kind):
            left, right = as_float(left), as_float(right)
        code = f"{left.code}.eqNullSafe({right.code})"
        for side in (left, right):
            if side.kind == "float":
                self.use("_is_nan")
                code = both(code, f"~_is_nan({side.code})")  # nan == nan is False in Python, true in Spark
        return Value(code if equal else negate(code), "bool", False, guards)

    def member(self, key: Value, table: Table, line: int) -> Value:
        """`key in table`: Python's == against each literal key; None is in it only if None is a key."""
        keys = [k for k, _ in table.items]
        if key.kind == "none" and key.is_const:
            return constant(None in keys, line)
        if key.kind == "bool":
            key = as_int(key)  # True == 1 in Python
        comparable = [k for k in keys if k is not None and (isinstance(k, str) if key.kind == "str" else isinstance(k, int | float) and not isinstance(k, str))]
        if key.kind == "float":
            comparable = [float(k) for k in comparable if not (isinstance(k, float) and math.isnan(k))]
        elif key.kind == "int":  # an int column meets only whole numbers a bigint holds
            comparable = [int(k) for k in comparable if (not isinstance(k, float) or k.is_integer()) and -(2**63) <= k < 2**63]
        found = f"F.coalesce({key.code}.isin({', '.join(py_literal(k) for k in comparable)}), F.lit(False))" if comparable else "F.lit(False)"
        if key.kind == "float":
            self.use("_is_nan")
            found = both(found, f"~_is_nan({key.code})")
        if None in keys and key.nullable:
            found = f"(({found}) | {key.code}.isNull())"
        return Value(found, "bool", False, key.guards)

    # --- text ----------------------------------------------------------------------

    def as_text(self, value: Value, line: int) -> Value:
        """str(value) for a str, an int or a bool ('None' for None): Spark's cast spells those as Python does."""
        if value.is_const:
            return constant(str(value.const), line)
        code = {"str": value.code, "int": f"{value.code}.cast('string')", "bool": f"F.when({value.code}, F.lit('True')).when(~{value.code}, F.lit('False'))"}.get(value.kind)
        if code is None:
            raise Refused(f"str() of {TYPE_NAMES[value.kind]} (a float's repr differs from Spark's: notes, section 13)", line)
        return Value(f"F.coalesce({code}, F.lit('None'))" if value.nullable else code, "str", False, value.guards)

    def _JoinedStr(self, node: ast.JoinedStr) -> Value:
        parts: list[Value] = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                if part.conversion not in (-1, ord("s")) or part.format_spec is not None:
                    raise Refused(f"an f-string field with a conversion or a format spec (`{ast.unparse(part)[:40]}`)", node.lineno)
                parts.append(self.as_text(self.expr(part.value), node.lineno))
            else:
                parts.append(constant(part.value, node.lineno))  # type: ignore[attr-defined]
        if all(p.is_const for p in parts):
            return constant("".join(str(p.const) for p in parts), node.lineno)
        return Value(f"F.concat({', '.join(p.code for p in parts)})", "str", False, tuple(g for p in parts for g in p.guards))

    # --- subscripts --------------------------------------------------------------

    def _Subscript(self, node: ast.Subscript) -> Value:
        if isinstance(node.value, ast.Name) and node.value.id in self.module.tables and node.value.id not in self.env:
            table = self.module.tables[node.value.id]
            if not table.is_dict:
                raise Refused(f"indexing the sequence `{table.name}`", node.lineno)
            return self.lookup(table, self.expr(node.slice), None, node.lineno)
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "split":
            return self.split_item(node.value, node)  # type: ignore[attr-defined]
        target = self.need(self.expr(node.value), "subscript", node.lineno)
        if target.kind != "str":
            raise Refused(f"subscript of {TYPE_NAMES[target.kind]}", node.lineno)
        if isinstance(node.slice, ast.Slice):
            bounds = [self.literal_int(b, node.lineno) for b in (node.slice.lower, node.slice.upper)]
            if node.slice.step is not None:
                raise Refused("a slice with a step", node.lineno)
            self.use("_py_slice")
            return Value(f"_py_slice({target.code}, {bounds[0]!r}, {bounds[1]!r})", "str", False, target.guards)
        index = self.literal_int(node.slice, node.lineno)
        if index is None:
            raise Refused("an index that is not a literal int", node.lineno)
        length = f"F.length({target.code})"
        out = f"({length} <= {index})" if index >= 0 else f"({length} < {-index})"
        position = f"F.lit({index + 1})" if index >= 0 else f"{length} + {index + 1}"
        guard = Guard(out, f"IndexError: string index out of range (line {node.lineno})")
        return Value(f"{target.code}.substr({position}, F.lit(1))", "str", False, (*target.guards, guard))

    def literal_int(self, node: ast.expr | None, line: int) -> int | None:
        if node is None:
            return None
        value = self.expr(node)
        if not value.is_const or not isinstance(value.const, int) or isinstance(value.const, bool):
            raise Refused("a slice bound that is not a literal int", line)
        return value.const

    def lookup(self, table: Table, key: Value, default: Value | None, line: int) -> Value:
        values = [v for _, v in table.items]
        if len({type(k) for k, _ in table.items}) > 1:
            raise Refused(f"a lookup in `{table.name}`, whose keys are not all of one type", line)
        kinds = {type(v) for v in values}
        if len(kinds) != 1 or (default is not None and default.kind not in ("none", *{constant(v, line).kind for v in values})):
            raise Refused(f"a lookup in `{table.name}`, whose values are not all of one type", line)
        found = self.member(key, table, line)
        self.use("_lookup")
        kind = constant(values[0], line).kind
        code = f"_lookup({key.code}, {table.name})" + (".cast('long')" if kind == "int" else "")
        self.tables_used.add(table.name)
        if default is None:
            guard = Guard(negate(found.code), f"KeyError: a key not in {table.name} (line {line})")
            return Value(code, kind, False, (*found.guards, guard))
        return Value(f"F.when({found.code}, {code}).otherwise({default.code})", kind, default.nullable, found.guards + default.guards)

    # --- imports ---------------------------------------------------------------

    def imported(self, node: ast.expr) -> str | None:
        """The module or module member a name or attribute chain names ("math", "math.isfinite"), if imported."""
        if isinstance(node, ast.Name) and node.id not in self.env:
            return self.module.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.imported(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def decimal_of(self, node: ast.expr) -> DecimalConst | DecimalContext | None:
        if isinstance(node, ast.Name) and node.id in self.module.decimals and node.id not in self.env:
            return self.module.decimals[node.id]
        if isinstance(node, ast.Call) and self.imported(node.func) == "decimal.Decimal":
            return decimal_quantum(node)
        return None

    def money_round(self, node: ast.Call) -> Value | None:
        """float(Decimal(repr(x)).quantize(Q[, ROUND_HALF_UP][, context=C])) for a float x: Spark's round() plus the sign of zero."""
        inner = node.args[0] if len(node.args) == 1 else None
        if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "quantize"):
            return None
        made = inner.func.value
        if not (isinstance(made, ast.Call) and self.imported(made.func) == "decimal.Decimal" and len(made.args) == 1):
            return None
        source = made.args[0]
        if not (isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id in ("repr", "str") and len(source.args) == 1):
            raise Refused("a Decimal made from something other than repr(x) of a float", node.lineno)
        quantum = self.decimal_of(inner.args[0]) if inner.args else None
        keywords = {k.arg: k.value for k in inner.keywords}
        rounding_node = inner.args[1] if len(inner.args) > 1 else keywords.get("rounding")
        context = self.decimal_of(keywords["context"]) if "context" in keywords else None
        rounding = (self.imported(rounding_node) or "").split(".")[-1] if rounding_node is not None else (context.rounding if isinstance(context, DecimalContext) else None)
        if not isinstance(quantum, DecimalConst) or rounding != "ROUND_HALF_UP":
            raise Refused("Decimal.quantize with a quantum or rounding other than a literal power of ten and ROUND_HALF_UP", node.lineno)
        digits = -quantum.exponent
        if not isinstance(context, DecimalContext) or context.prec < 309 + digits:
            raise Refused(f"Decimal.quantize under a context of under {309 + digits} digits (it raises InvalidOperation for large values)", node.lineno)
        value = self.need(self.expr(source.args[0]), "repr", node.lineno)
        if value.kind != "float":
            raise Refused("Decimal(repr(x)) of a value that is not a float", node.lineno)
        self.use("_half_up")
        infinite = Guard(f"F.abs({value.code}) == {INF}", f"InvalidOperation: quantize of an infinity (line {node.lineno})")
        return Value(f"_half_up({value.code}, {digits})", "float", False, (*value.guards, infinite))

    def whitespace(self) -> str:
        self.use("PY_WHITESPACE")
        return "PY_WHITESPACE"


__all__ = ["Expressions", "PY_WHITESPACE", "as_float", "as_int", "number"]
