"""The check, when the topology is built, that a user function can be called as its operator
calls it.

A one-argument ``filter`` predicate would otherwise fail at the first record (``TypeError:
<lambda>() takes 1 positional argument but 2 were given``), in a running application, as a
processing error. :func:`check_function` reads the function's signature once, when the DSL
method is called, and refuses it with the operator, the call it makes and where the function
is defined. A function whose signature cannot be read (some builtins and C extensions) is
taken as it is; so are ``*args`` functions and parameters with defaults.

>>> check_function("KStream.filter", "predicate(key, value)", lambda key, value: True)
>>> check_function("KStream.filter", "predicate(key, value)", lambda value: True)
Traceback (most recent call last):
...
sluice.streams.errors.TopologyError: KStream.filter calls predicate(key, value), but <lambda>...
>>> check_function("KStream.map_values", "mapper(value)", len)
"""

from __future__ import annotations

import inspect
from typing import Any

from sluice.streams.errors import TopologyError

__all__ = ["check_function"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def check_function(operator: str, call: str, function: Any) -> None:
    """Refuse ``function`` unless it can be called as ``call`` (``"joiner(value, other)"``):
    with as many positional arguments as ``call`` names."""
    inside = call[call.index("(") + 1 : call.rindex(")")].strip()
    count = len(inside.split(",")) if inside else 0
    if not callable(function):
        raise TopologyError(f"{operator} calls {call}: it needs a function, not {function!r}")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return  # no signature to read (a builtin): taken as it is
    parameters = list(signature.parameters.values())
    positional = [p for p in parameters if p.kind in _POSITIONAL]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    keyword_only = [
        p.name
        for p in parameters
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    if keyword_only:
        problem = f"needs keyword-only {', '.join(keyword_only)}"
    elif len(required) > count:
        problem = f"needs {len(required)} positional argument{'s' * (len(required) != 1)}"
    elif len(positional) < count and not variadic:
        problem = f"takes {len(positional)} positional argument{'s' * (len(positional) != 1)}"
    else:
        return
    raise TopologyError(f"{operator} calls {call}, but {_describe(function, signature)} {problem}")


def _describe(function: Any, signature: inspect.Signature) -> str:
    """``name(parameters)`` and, for Python functions, where they are defined."""
    name = getattr(function, "__name__", None) or type(function).__name__
    code = getattr(inspect.unwrap(function), "__code__", None)
    where = "" if code is None else f" (defined at {code.co_filename}:{code.co_firstlineno})"
    parameters = str(signature).split(" ->")[0]
    return f"{name}{parameters}{where}"
