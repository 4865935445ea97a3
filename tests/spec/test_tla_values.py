"""The reader of TLA+ values as TLC prints them (no TLC needed)."""

import pytest

from refqueue.spec_check.values import ModelValue, TlaValueError, _variables, parse_state, parse_value


@pytest.mark.parametrize(
    "text, value",
    [
        ("0", 0),
        ("-12", -12),
        ('"s0"', "s0"),
        ('"a \\"q\\" \\\\ b\\n"', 'a "q" \\ b\n'),
        ("TRUE", True),
        ("FALSE", False),
        ("NoLease", ModelValue("NoLease")),
        ("<<>>", ()),
        ('<<"s0", "s1">>', ("s0", "s1")),
        ('<<<<"s0", "max_deliveries">>>>', (("s0", "max_deliveries"),)),
        ("{}", frozenset()),
        ("{1, 2, 2}", frozenset({1, 2})),
        ("[a |-> 1, b |-> <<TRUE>>]", {"a": 1, "b": (True,)}),
        ("(0 :> FALSE @@ 1 :> TRUE)", {0: False, 1: True}),
        ('("s0" :> 1)', {"s0": 1}),
        ("(c1 :> 1 @@ c2 :> 2)", {ModelValue("c1"): 1, ModelValue("c2"): 2}),
    ],
)
def test_values(text, value):
    assert parse_value(text) == value
    assert type(parse_value(text)) is type(value)


def test_pretty_printed_nested_value():
    text = """( 0 :> [lease |-> [sample_id |-> "s0", incarnation |-> 1, redelivery_count |-> 0],
        holding |-> FALSE, stopped |-> FALSE] @@
  1 :> [lease |-> NoLease, holding |-> FALSE, stopped |-> TRUE] )"""
    assert parse_value(text) == {
        0: {"lease": {"sample_id": "s0", "incarnation": 1, "redelivery_count": 0}, "holding": False, "stopped": False},
        1: {"lease": ModelValue("NoLease"), "holding": False, "stopped": True},
    }


def test_state():
    text = '/\\ recs = [ s0 |->\n      [ status |-> "stored", deadline |-> NoDeadline ] ]\n/\\ now = 0\n/\\ ids = <<"s0">>'
    assert parse_state(text) == {
        "recs": {"s0": {"status": "stored", "deadline": ModelValue("NoDeadline")}},
        "now": 0,
        "ids": ("s0",),
    }


def test_state_of_one_variable():
    assert parse_state("x = <<1>>") == {"x": (1,)}


def test_state_cache_returns_equal_values():
    cache: dict = {}
    first = parse_state("/\\ a = <<1, 2>>\n/\\ b = 3", cache)
    second = parse_state("/\\ a = <<1, 2>>\n/\\ b = 4", cache)
    assert first["a"] is second["a"]
    assert (first["b"], second["b"]) == (3, 4)


@pytest.mark.parametrize(
    "text, message",
    [
        ("<<1, 2", r"^expected '>>' but found the end of the text in '<<1, 2'$"),
        ("[a |-> 1, a |-> 2]", r"^field 'a' appears twice in '\[a \|-> 1, a \|-> 2\]'$"),
        ("1 2", r"^expected the end of the value but found 2 at position 2 in '1 2'$"),
        ("1 + 2", r"^unexpected character '\+' at position 2 of '1 \+ 2'$"),
        ("", r"^expected a value but found the end of the text in ''$"),
        ("(1 :> 2 @@ 1 :> 3)", r"^key 1 appears twice in '\(1 :> 2 @@ 1 :> 3\)'$"),
    ],
)
def test_malformed_values_are_rejected(text, message):
    with pytest.raises(TlaValueError, match=message):
        parse_value(text)


def test_a_line_that_starts_like_a_variable_but_names_none_belongs_to_the_value_before_it():
    # (a state is split at its line starts; only "/\\ name = " starts a variable)
    assert _variables("/\\ a = <<1,\n/\\ 2>>\n/\\ b = 3") == [("a", "<<1,\n/\\ 2>>"), ("b", "3")]
    assert parse_state("/\\ a = <<1, 2>>\n/\\ b = 3\n") == {"a": (1, 2), "b": 3}
    with pytest.raises(TlaValueError, match=r"^expected '/\\ var = value' lines, got '/\\\\ 1 = 2'$"):
        parse_state("/\\ 1 = 2")


def test_malformed_state_is_rejected():
    with pytest.raises(TlaValueError, match=r"^expected '/\\ var = value' lines, got 'State 1: <Init>'$"):
        parse_state("State 1: <Init>")
    with pytest.raises(TlaValueError, match=r"^variable 'x' appears twice in "):
        parse_state("/\\ x = 1\n/\\ x = 2")


def test_non_text_is_a_type_error():
    with pytest.raises(TypeError, match=r"^parse_value needs the printed value as a str, got bytes$"):
        parse_value(b"1")  # type: ignore[arg-type]
