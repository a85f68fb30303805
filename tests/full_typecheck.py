"""The test run's typechecker: beartype, plus a check of every item of every container.

pyproject names `full_typecheck.typechecker` in `--jaxtyping-packages`, so jaxtyping's
import hook wraps every function of `powerzoojax` with it. beartype alone checks one
random item of a container per call (its O(1) strategy; `BeartypeStrategy.On` is
accepted by its configuration but not implemented, so it checks one item too): a
`list[str]` with one bad item among a hundred passes most calls. This wrapper walks
every item of the arguments and the return value whose hints hold a container (lists,
tuples, sets, mappings, sequences, unions and `Annotated` of those) and checks each
leaf with `beartype.door.is_bearable`, around beartype's own check. Functions whose
hints hold no container keep beartype's wrapper alone. It runs inside jaxtyping's
`jaxtyped` context, so array shapes of items bind to the same dimension names as the
call's other arguments.
"""

from __future__ import annotations

import collections.abc as abc
import functools
import inspect
import types
import typing
from typing import Any

from beartype import beartype
from beartype.door import is_bearable

# Containers iterated item by item: only ones that can be iterated again without being
# consumed (an `Iterable` or `Iterator` hint is left to beartype).
_ITEM_CONTAINERS = (list, set, frozenset, abc.Sequence, abc.MutableSequence, abc.Set, abc.MutableSet, abc.Collection)
_MAPPINGS = (dict, abc.Mapping, abc.MutableMapping)


class ContainerItemViolation(TypeError):
    """An item of a container argument or return value breaks its hint."""


def _holds_container(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is None:
        return False
    if origin is typing.Annotated:
        return _holds_container(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_holds_container(arg) for arg in typing.get_args(hint))
    return origin is tuple or origin in _ITEM_CONTAINERS or origin in _MAPPINGS


def _violation(value: Any, hint: Any) -> str | None:
    """Where `value` breaks `hint` (a path such as `[3]['a']` and the leaf's hint), or None."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _violation(value, args[0])
    if origin in (typing.Union, types.UnionType):
        # The value is fine when some branch accepts all of it.
        first = None
        for arg in args:
            found = _violation(value, arg)
            if found is None:
                return None
            first = first or found
        return first
    if not args or not (origin is tuple or origin in _ITEM_CONTAINERS or origin in _MAPPINGS):
        return None if is_bearable(value, hint) else f": {value!r:.80} is not {hint!r}"
    if not isinstance(value, origin):
        return f": {type(value).__name__} is not {hint!r}"
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            items = [(f"[{i}]", item, args[0]) for i, item in enumerate(value)]
        elif len(value) != len(args):
            return f": {len(value)} items, {hint!r} has {len(args)}"
        else:
            items = [(f"[{i}]", item, arg) for i, (item, arg) in enumerate(zip(value, args))]
    elif origin in _MAPPINGS:
        key_hint, value_hint = args if len(args) == 2 else (Any, Any)
        items = [pair for key, item in typing.cast(abc.Mapping[Any, Any], value).items() for pair in ((f" key {key!r:.40}", key, key_hint), (f"[{key!r:.40}]", item, value_hint))]
    else:
        items = [(f"[{i}]", item, args[0]) for i, item in enumerate(value)]
    for where, item, item_hint in items:
        found = _violation(item, item_hint)
        if found is not None:
            return where + found
    return None


def _without_return_hint(fn: types.FunctionType) -> types.FunctionType:
    """A copy of `fn` without its return hint, for beartype to wrap: the wrapper checks a
    container return value item by item itself, so beartype's one random item of it can
    never be the first to object (a bad item would read differently from call to call)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    copy.__dict__.update(fn.__dict__)
    copy.__annotations__ = {name: hint for name, hint in fn.__annotations__.items() if name != "return"}
    return copy


def typechecker(fn: Any) -> Any:
    """beartype's wrapper of `fn`, checking every container item of the hinted arguments
    and return value (see the module docstring)."""
    annotations = getattr(fn, "__annotations__", None)
    if not inspect.isfunction(fn) or not annotations:
        return beartype(fn)
    hints = {name: hint for name, hint in annotations.items() if not isinstance(hint, str) and _holds_container(hint)}
    if not hints:
        return beartype(fn)
    signature = inspect.signature(fn)
    return_hint = hints.pop("return", None)
    checked = beartype(fn if return_hint is None else _without_return_hint(fn))

    @functools.wraps(fn)
    def every_item(*args: Any, **kwargs: Any) -> Any:
        # The items first, so a bad item always reads the same (beartype's one random
        # item may or may not be it); a container return value is checked here alone.
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            if name not in hints:
                continue
            kind = signature.parameters[name].kind
            # `*args: T` and `**kwargs: T` hint each item, not the tuple or dict.
            if kind is inspect.Parameter.VAR_POSITIONAL:
                items = [(f"[{i}]", item) for i, item in enumerate(value)]
            elif kind is inspect.Parameter.VAR_KEYWORD:
                items = [(f"[{key!r}]", item) for key, item in value.items()]
            else:
                items = [("", value)]
            for where, item in items:
                found = _violation(item, hints[name])
                if found is not None:
                    raise ContainerItemViolation(f"{fn.__qualname__}() parameter {name!r}{where}{found}")
        result = checked(*args, **kwargs)
        if return_hint is not None:
            found = _violation(result, return_hint)
            if found is not None:
                raise ContainerItemViolation(f"{fn.__qualname__}() return{found}")
        return result

    return every_item
