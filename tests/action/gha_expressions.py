"""GitHub Actions expressions (`${{ ... }}` and `if:`), as much of them as action.yml and the
example workflow use: literals, contexts with dotted names (hyphens allowed), `==` `!=` `&&`
`||` `!`, parentheses and the functions always/success/failure/cancelled, toJSON, fromJSON,
startsWith, endsWith, contains. Semantics follow GitHub's documentation: `&&`/`||` return an
operand, string comparison ignores case, false/0/''/null are falsy."""

from __future__ import annotations

import json
import re
from typing import Any

_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||[!().,\[\]])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}", re.S)


class ExpressionError(Exception):
    pass


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise ExpressionError(f"cannot read {text[pos:]!r} in {text!r}")
        kind = match.lastgroup
        assert kind is not None
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


def truthy(value: Any) -> bool:
    return value not in (False, 0, "", None) and not (isinstance(value, float) and value != value)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) or isinstance(b, (int, float)):
        try:
            return float(a) == float(b)
        except (TypeError, ValueError):
            return False
    return a == b


def to_text(value: Any) -> str:
    """How a value is pasted into a string (an env value, a `with:` input)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2)
    return str(value)


class _Parser:
    def __init__(self, text: str, context: dict[str, Any], status: dict[str, bool]) -> None:
        self.tokens = _tokens(text)
        self.i = 0
        self.context = context
        self.status = status
        self.text = text

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            raise ExpressionError(f"expected {value!r} in {self.text!r}")
        self.i += 1
        return token

    def parse(self) -> Any:
        value = self.or_()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek()[1]!r} in {self.text!r}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.compare()
        while self.peek() == ("op", "&&"):
            self.take()
            right = self.compare()
            value = right if truthy(value) else value
        return value

    def compare(self) -> Any:
        value = self.unary()
        while self.peek() in (("op", "=="), ("op", "!=")):
            op = self.take()[1]
            right = self.unary()
            value = _equal(value, right) if op == "==" else not _equal(value, right)
        return value

    def unary(self) -> Any:
        if self.peek() == ("op", "!"):
            self.take()
            return not truthy(self.unary())
        return self.primary()

    def primary(self) -> Any:
        kind, text = self.take()
        if kind == "num":
            return float(text) if "." in text else int(text)
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if text == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r} in {self.text!r}")
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if self.peek() == ("op", "("):
            return self.call(text)
        value: Any = self.context.get(text)
        while self.peek() in (("op", "."), ("op", "[")):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = to_text(self.or_())
                self.take("]")
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def call(self, name: str) -> Any:
        self.take("(")
        args = []
        while self.peek() != ("op", ")"):
            args.append(self.or_())
            if self.peek() == ("op", ","):
                self.take()
        self.take(")")
        lowered = name.lower()
        if lowered in self.status:
            return self.status[lowered]
        if lowered == "tojson":
            return json.dumps(args[0], indent=2)
        if lowered == "fromjson":
            return json.loads(to_text(args[0]))
        if lowered in ("startswith", "endswith", "contains"):
            a, b = to_text(args[0]).casefold(), to_text(args[1]).casefold()
            return {"startswith": a.startswith, "endswith": a.endswith}.get(
                lowered, a.__contains__
            )(b)
        raise ExpressionError(f"function {name}() is not supported by this harness")


def evaluate(text: str, context: dict[str, Any], status: dict[str, bool] | None = None) -> Any:
    status = status or {"always": True, "success": True, "failure": False, "cancelled": False}
    return _Parser(text, context, status).parse()


def interpolate(template: str, context: dict[str, Any]) -> str:
    """A string with every `${{ ... }}` replaced by its value's text."""
    return _EXPRESSION.sub(lambda m: to_text(evaluate(m.group(1), context)), template)


def condition(text: str | bool | None, context: dict[str, Any], failed: bool) -> bool:
    """An `if:`; without a status function GitHub adds `success() &&`."""
    if text is None:
        return not failed
    if isinstance(text, bool):
        return text and not failed
    inner = _EXPRESSION.fullmatch(text.strip())
    body = inner.group(1) if inner else text
    status = {"always": True, "success": not failed, "failure": failed, "cancelled": False}
    uses_status = re.search(r"\b(always|success|failure|cancelled)\s*\(", body)
    value = truthy(evaluate(body, context, status))
    return value if uses_status else value and not failed
