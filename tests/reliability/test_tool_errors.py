"""A tool that fails on the model's input fails softly: the calculator turns every evaluation error into its own
ValueError (naming the expression), which the program treats as "no calculation", so a reply like ``(-8)**0.5``
(a complex number) is recorded on the tool's trace node and the episode goes on instead of the task failing (again
on every resume, since the model's reply is cached)."""

from __future__ import annotations

import shutil

import pytest

from nlgrad.programs.calculator import calculate

ESCAPING = ["(-8)**0.5", "(-1)**0.5 * 2", "-(-8)**0.5", "(-8)**(1/3)", "((-8)**0.5) // 2", "((-8)**0.5) % 2",
            "(-2.5)**-0.5", "2 ** (-8)**0.5"]


@pytest.mark.parametrize("expression", ESCAPING)
def test_every_evaluation_error_is_the_calculators_value_error(expression):
    with pytest.raises(ValueError) as info:
        calculate(expression)
    assert type(info.value) is ValueError
    assert f"cannot evaluate {expression!r}" in str(info.value)


def test_a_complex_result_is_named_as_such():
    with pytest.raises(ValueError, match="not a real number"):
        calculate("(-8)**0.5")


def test_real_powers_still_evaluate():
    assert calculate("8**(1/3)") == "2" and calculate("(-8)**3") == "-512" and calculate("2**0.5") == "1.4142"


class _Ctx:
    """The two calls of RunContext that solve_problem makes: the solve module (answering ``reply``) and the tool
    (run, re-raising its error as RunContext.tool does after recording it)."""

    def __init__(self, reply: str):
        from nlgrad.runtime.context import Output

        self.output, self.errors = Output(reply, "solve"), []

    def call(self, module, *, after, **inputs):
        return self.output

    def tool(self, name, fn, *, after=None, **args):
        from nlgrad.runtime.context import Output

        values = {k: v.value if isinstance(v, Output) else v for k, v in args.items()}
        try:
            return Output(fn(**values), "tool")
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
            raise


@pytest.mark.parametrize("reply", ["(-8)**0.5", "((-8)**0.5) // 2"])
def test_the_scaffolded_program_goes_on_without_a_calculation(reply):
    pytest.importorskip("textworld_express")
    from nlgrad.runtime.context import Output
    from nlgrad.runtime.registry import load_benchmark, load_program

    program = load_program("twx_scaffolded", load_benchmark("twx/arithmetic"))
    ctx = _Ctx(reply)
    problem = "Your task is to solve the following math problem: add 22 and 23 ."
    assert program.solve_problem(ctx, problem, Output(problem, "read")) is None
    assert len(ctx.errors) == 1 and ctx.errors[0].startswith("ValueError: cannot evaluate")


@pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java")
def test_a_complex_expression_leaves_the_arithmetic_task_without_error(make_lm, script):
    pytest.importorskip("textworld_express")
    from nlgrad.runtime.executor import Executor
    from nlgrad.runtime.registry import load_benchmark, load_program

    script(["1", "1", "(-8)**0.5"] + ["1"] * 10)
    bench = load_benchmark("twx/arithmetic")
    result = Executor(benchmark=bench, program=load_program("twx_scaffolded", bench), lm=make_lm(), step_cap=6,
                      progress=False, keep_traces=True).run(bench.tasks("dev", 2)[1:])
    (r,) = result.results
    assert r.error is None, r.error
    assert r.output["calculation"] == ""
    (tool,) = result.traces[r.task_id].nodes(kind="tool")
    assert tool["error"].startswith("ValueError: cannot evaluate '(-8)**0.5'")
