"""From text to tree: the whitelist, the precedence trap, folding and the names."""

import numpy as np
import pytest

from bcolzx._query.expr import FUNCTIONS, MAX_LENGTH, compile_expression
from bcolzx.errors import BcolzxError, ExpressionError

# -- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, words",
    [
        ("a.real", "attribute"),
        ("a.__class__", "attribute"),
        ("a[0]", "indexing"),
        ("(lambda: 1)()", "calls"),
        ("lambda x: x", "lambda"),
        ("[x for x in a]", "comprehension"),
        ("{x for x in a}", "comprehension"),
        ("(x for x in a)", "comprehension"),
        ("sin(x=a)", "positional"),
        ("sin(*a)", "unpacking"),
        ("open('f')", "'open' is not allowed"),
        ("__import__('os')", "'__import__' is not allowed"),
        ("eval('1')", "'eval' is not allowed"),
        ("_a + 1", "may not start with '_'"),
        ("(y := a)", "assignment"),
        ("f'{a}'", "f-string"),
        ("a if b else c", "conditional"),
        ("a @ b", "@"),
        ("a in b", "'in'"),
        ("a is b", "'is'"),
        ("None", "None"),
        ("...", "Ellipsis"),
        ("[a, b]", "List"),
        ("(a, b)", "Tuple"),
        ("{'k': a}", "Dict"),
        ("'abc'", "can only be compared"),
        ("a + 'abc'", "can only be compared"),
        ("sin + 1", "is a function"),
        ("sin(a, b)", "takes 1 argument"),
        ("where(a, b)", "takes 3 argument"),
        ("2 ** 10 ** 10", "does not fit in int64"),
        ("1 << 10 ** 9", "does not fit in int64"),
        ("2 ** 63", "does not fit in int64"),
        ("a + 9223372036854775808", "does not fit in int64"),
        ("1 / 0 + a", "division by zero"),
        ("a +", "invalid expression"),
        ("", "invalid expression"),
        ("a = 1", "invalid expression"),
        ("import os", "invalid expression"),
    ],
)
def test_forbidden_expressions_raise_before_evaluation(text, words):
    with pytest.raises(ExpressionError) as info:
        compile_expression(text)
    assert words in str(info.value)


def test_expression_error_is_a_bcolzx_value_error():
    assert issubclass(ExpressionError, BcolzxError)
    assert issubclass(ExpressionError, ValueError)


def test_syntax_error_is_chained():
    with pytest.raises(ExpressionError) as info:
        compile_expression("a + * b")
    assert isinstance(info.value.__cause__, SyntaxError)


def test_too_long_and_too_deep_expressions_are_refused():
    with pytest.raises(ExpressionError, match="longer than"):
        compile_expression("a" + " + a" * MAX_LENGTH)
    with pytest.raises(ExpressionError, match="nested deeper|cannot be parsed|invalid"):
        compile_expression("-" * 5000 + "a")
    with pytest.raises(ExpressionError):
        compile_expression("(" * 300 + "a" + ")" * 300)


def test_long_sums_are_not_too_deep():
    text = " + ".join(f"a{i % 7}" for i in range(150))
    namespace = {f"a{i}": np.arange(3) for i in range(7)}
    np.testing.assert_array_equal(compile_expression(text).evaluate(namespace),
                                  np.arange(3) * 150)


def test_non_str_expression_is_a_type_error():
    with pytest.raises(TypeError):
        compile_expression(b"a + 1")


@pytest.mark.parametrize(
    "text, suggestion",
    [
        ("a < 5 & b > 1", "(a < 5) & (b > 1)"),
        ("a < 5 | b > 1", "(a < 5) | (b > 1)"),
        ("a == 1 ^ b == 2", "(a == 1) ^ (b == 2)"),
        ("a == 1 & b", "(a == 1) & b"),
        ("(a < 5) & b > 1", "(a < 5) & (b > 1)"),
        ("a >= 0 & b < 1 | c > 2", "(a >= 0) & (b < 1) | (c > 2)"),
    ],
)
def test_bitwise_operator_inside_a_comparison_asks_for_parentheses(text, suggestion):
    with pytest.raises(ExpressionError, match="parentheses") as info:
        compile_expression(text)
    assert repr(suggestion) in str(info.value)


@pytest.mark.parametrize("text", ["(a & b) == 0", "(a < 5) & (b > 1)", "((a) | b) != c",
                                  "a & b", "0 < (a ^ b) < 5"])
def test_explicit_parentheses_are_not_a_precedence_trap(text):
    compile_expression(text)


def test_names_in_order_of_first_appearance_without_functions():
    e = compile_expression("sqrt(b) + a * b - where(c > 0, a, d)")
    assert e.names == ("b", "a", "c", "d")
    assert compile_expression("0 < x < 5").names == ("x",)
    assert compile_expression("2 + 3").names == ()



def test_every_function_is_accepted_with_its_arity():
    for name, arity in FUNCTIONS.items():
        args = ", ".join(f"x{i}" for i in range(arity))
        assert compile_expression(f"{name}({args})").names == tuple(
            f"x{i}" for i in range(arity))
