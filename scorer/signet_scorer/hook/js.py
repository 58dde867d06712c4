"""JSON and strings as Signet's command line (JavaScript) writes them, so what the hook prints
matches it byte for byte: `JSON.parse` keeping each number's text, `JSON.stringify` compact and
with a two-space indent, `String.prototype.trim`, and UTF-8 as Node writes a string (a lone
surrogate becomes U+FFFD). Standard library only; `typing` is not imported at run time, and
`json` and `re` only once a text is read or written (the hook's start is on every session's
path: what loads before Signet's command starts delays it)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["JsNumber", "js_list", "js_object", "js_trim", "parse_json", "stringify", "utf8"]

# ECMAScript WhiteSpace and LineTerminator: what `trim` removes (Python's `strip` differs: it
# keeps U+FEFF and removes U+001C..U+001F and U+0085).
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_SURROGATE = "[\ud800-\udfff]"  # a lone surrogate (`re`'s cache keeps it compiled)


class JsNumber(str):
    """A JSON number kept as the text it was written with, so it is written back unchanged."""

    __slots__ = ()


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> Any:
    """`JSON.parse`: objects, arrays, strings, booleans and null as Python values, numbers as
    `JsNumber`; NaN and Infinity are refused (ValueError), as JavaScript refuses them."""
    import json  # here: after Signet starts (start-up time; module docstring)

    return json.loads(text, parse_int=JsNumber, parse_float=JsNumber, parse_constant=_constant)


def js_object(value: object) -> dict[str, Any] | None:
    """`value` as the JSON object it is (a parsed object's keys are text), else None."""
    if not isinstance(value, dict):
        return None
    obj: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType] (keys: text)
    return obj


def js_list(value: object) -> list[Any] | None:
    """`value` as the JSON array it is, else None."""
    if not isinstance(value, list):
        return None
    items: list[Any] = value  # pyright: ignore[reportUnknownVariableType] (JSON values)
    return items


def _string(s: str) -> str:
    """A string literal as `JSON.stringify` writes it (lone surrogates as lower-case escapes)."""
    import json  # here: after Signet starts, as `re` (start-up time; module docstring)
    import re

    out = json.dumps(s, ensure_ascii=False)
    return re.sub(_SURROGATE, lambda m: f"\\u{ord(m.group()):04x}", out)


def _scalar(value: Any) -> str:
    if isinstance(value, JsNumber):
        return str(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"cannot write a {type(value).__name__} as Signet does")


def stringify(value: Any, indent: int = 0, _depth: int = 0) -> str:
    """`JSON.stringify(value)` (indent 0) or `JSON.stringify(value, null, indent)`; keys in
    their order. Floats are refused: only numbers read by `parse_json` are written."""
    obj = js_object(value)
    if obj is not None:
        items = [(_string(str(k)), v) for k, v in obj.items()]
        sep = ": " if indent else ":"
        parts = [f"{k}{sep}{stringify(v, indent, _depth + 1)}" for k, v in items]
        return _container(parts, "{", "}", indent, _depth)
    seq: list[Any] | tuple[Any, ...] | None = js_list(value)
    if seq is None and isinstance(value, tuple):
        seq = value  # pyright: ignore[reportUnknownVariableType] (JSON values)
    if seq is not None:
        parts = [stringify(v, indent, _depth + 1) for v in seq]
        return _container(parts, "[", "]", indent, _depth)
    return _scalar(value)


def _container(parts: list[str], open_: str, close: str, indent: int, depth: int) -> str:
    if not parts:
        return open_ + close
    if not indent:
        return open_ + ",".join(parts) + close
    inner = "\n" + " " * (indent * (depth + 1))
    return open_ + inner + ("," + inner).join(parts) + "\n" + " " * (indent * depth) + close


def js_trim(s: str) -> str:
    """`s.trim()`."""
    return s.strip(_JS_SPACE)


def utf8(s: str) -> bytes:
    """The bytes Node writes for a string: UTF-8, a lone surrogate as U+FFFD."""
    import re  # here: after Signet starts (start-up time; module docstring)

    return re.sub(_SURROGATE, "\ufffd", s).encode("utf-8")
