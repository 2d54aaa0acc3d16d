"""The Spark plan of a sql candidate, read as a profile: where the JVM work goes and what is done twice.

A sql candidate runs in the JVM, where neither nsys nor a Python profiler sees it. What decides
its speed is visible in the plan instead: whether its operators run inside whole-stage codegen,
which expressions cannot be compiled (CodegenFallback, evaluated interpreted row by row), and
which subexpressions appear more than once in the executed plan. Those are counts of copies in the
plan, not measurements: Spark's subexpression elimination shares copies outside conditionals, but
not the copies inside the branches of CASE WHEN / IF / COALESCE, each of which is evaluated when its
branch is taken. For a `build` that returns (name, Column) steps, the profile also says which steps
survived as projections of their own: Spark's CollapseProject inlines a step that later steps use
once (computed once either way) and keeps one used more than once.

Reads the plan through py4j in the process that owns the SparkSession; never executes the query.
"""

from __future__ import annotations

from typing import Any

# Operators that wrap others for codegen or adaptive execution and do no work of their own.
WRAPPERS = frozenset({"WholeStageCodegenExec", "InputAdapter", "AdaptiveSparkPlanExec"})
# Expressions whose children are evaluated only on some rows: copies below them are not shared.
CONDITIONALS = frozenset({"CaseWhen", "If", "Coalesce", "NaNvl", "Nvl", "Nvl2", "IfNull", "NullIf"})
# Subtrees smaller than this (e.g. `isnull(age)`) cost too little to be worth a step of their own.
MIN_REPEATED_NODES = 3
MAX_REPEATED = 12
MAX_TEXT = 240


def profile_plan(frame: Any, steps: list[str] | None = None) -> dict[str, Any]:
    """Plans, codegen coverage, the repeated subexpressions of `frame`'s executed plan, and which of the
    helper `steps` (every step but the result) it still computes as a column of their own."""
    execution = frame._jdf.queryExecution()
    physical = execution.executedPlan()
    jvm = frame.sparkSession._jvm
    fallback_class = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback")
    operators: list[dict[str, Any]] = []
    expressions: list[tuple[str, Any]] = []
    _walk_operators(_unwrap_adaptive(physical), False, operators, expressions)
    fallbacks: dict[str, int] = {}
    counter = _SubtreeCounter()
    for owner, expression in expressions:
        counter.add(owner, expression)
        for node in _expression_nodes(expression):
            if fallback_class.isInstance(node):
                name = node.prettyName()
                fallbacks[name] = fallbacks.get(name, 0) + 1
    working = [o for o in operators if o["operator"] not in WRAPPERS]
    compiled = [o for o in working if o["in_codegen"]]
    return {
        "optimized_plan": execution.optimizedPlan().toString(),
        "physical_plan": physical.toString(),
        "codegen": {
            "operators": len(working),
            "in_codegen": len(compiled),
            "coverage": round(len(compiled) / len(working), 3) if working else 1.0,
            "outside_codegen": sorted({o["operator"] for o in working if not o["in_codegen"]}),
            "stages": sum(1 for o in operators if o["operator"] == "WholeStageCodegenExec"),
            "fallback_expressions": fallbacks,
        },
        "repeated": counter.repeated(),
        "steps": _steps(steps or [], expressions, sum(1 for o in working if o["operator"] == "ProjectExec")),
    }


def _steps(steps: list[str], expressions: list[tuple[str, Any]], projections: int) -> dict[str, Any] | None:
    if not steps:
        return None
    aliases = {str(expression.name()) for owner, expression in expressions if owner.startswith("Project ") and expression.getClass().getSimpleName() == "Alias"}
    return {"helpers": steps, "kept": [s for s in steps if s in aliases], "inlined": [s for s in steps if s not in aliases], "projections": projections}


def _unwrap_adaptive(plan: Any) -> Any:
    return plan.executedPlan() if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec" else plan


def _walk_operators(plan: Any, in_codegen: bool, operators: list[dict[str, Any]], expressions: list[tuple[str, Any]]) -> None:
    name = plan.getClass().getSimpleName()
    operators.append({"operator": name, "in_codegen": in_codegen})
    if name == "WholeStageCodegenExec":
        in_codegen = True
    elif name == "InputAdapter":
        in_codegen = False  # the boundary below a codegen stage
    else:
        owned = plan.expressions()
        for index in range(owned.size()):
            expressions.append((f"{name.removesuffix('Exec')} #{len(operators)}", owned.apply(index)))
    children = plan.children()
    for index in range(children.size()):
        _walk_operators(_unwrap_adaptive(children.apply(index)), in_codegen, operators, expressions)


def _expression_nodes(expression: Any) -> list[Any]:
    nodes, stack = [], [expression]
    while stack:
        node = stack.pop()
        nodes.append(node)
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return nodes


class _SubtreeCounter:
    """Counts semantically equal subtrees within each operator's expressions."""

    def __init__(self) -> None:
        # (operator, semantic hash) -> occurrences: (size, node, parent key or None, under a conditional)
        self.seen: dict[tuple[str, int], list[tuple[int, Any, tuple[str, int] | None, bool]]] = {}

    def add(self, owner: str, root: Any) -> None:
        self._visit(owner, root, None, False)

    def _visit(self, owner: str, node: Any, parent: tuple[str, int] | None, conditional: bool) -> int:
        children = node.children()
        count = children.size()
        if count == 0:
            return 1
        name = node.getClass().getSimpleName()
        if name in ("Alias",):
            return self._visit(owner, children.apply(0), parent, conditional)
        key = (owner, int(node.canonicalized().semanticHash()))
        size = 1
        for index in range(count):
            # the first condition of a CASE WHEN / IF always runs; every other child only on some rows
            below = conditional or (name in CONDITIONALS and index > 0)
            size += self._visit(owner, children.apply(index), key, below)
        if size >= MIN_REPEATED_NODES:
            self.seen.setdefault(key, []).append((size, node, parent, conditional))
        return size

    def repeated(self) -> list[dict[str, Any]]:
        found = []
        for key, occurrences in self.seen.items():
            if len(occurrences) < 2:
                continue
            # a copy that only ever appears inside a larger repeated copy is reported as that one
            parents = {parent for _size, _node, parent, _conditional in occurrences}
            if parents and all(p is not None and len(self.seen.get(p, [])) == len(occurrences) for p in parents):
                continue
            size, node = occurrences[0][0], occurrences[0][1]
            found.append(
                {
                    "expression": node,
                    "operator": key[0],
                    "count": len(occurrences),
                    "nodes": size,
                    "in_branches": any(conditional for *_rest, conditional in occurrences),
                }
            )
        found.sort(key=lambda item: -(item["count"] - 1) * item["nodes"])
        return [{**item, "expression": _text(item["expression"])} for item in found[:MAX_REPEATED]]


def _text(node: Any) -> str:
    try:
        text = str(node.sql())
    except Exception:  # some expressions have no SQL form
        text = str(node.toString())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."
