"""Input guards shared by every env and multi-agent adapter.

Two kinds of bad input are told apart:

- Mistakes visible from shapes and types (wrong params class, an action of the wrong
  shape, a Python list as action) raise on the host while tracing, in one line that
  names the bad value and what was expected.
- Non-finite numbers (NaN, ±inf) are values, so inside `jit` they cannot raise. They
  are replaced by the neutral value and reported as a flag, so that state, reward and
  costs stay finite and the event shows up in `info`.

The neutral value of an action entry is 0 clipped into that entry's bounds in the
action space: the midpoint of a normalised `[-1, 1]` action, the lower bound of a
`[0, 1]` one.
"""

import inspect
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Shaped

INVALID_ACTION_KEY = "invalid_action"
INVALID_PROFILES_KEY = "invalid_load_profiles"


def as_action_array(
    action: Any, owner: str, expected_shape: tuple[int, ...], layout: str | None = None
) -> Array:
    """`action` as an array of `expected_shape`, or a one-line `ValueError`.

    Python scalars and NumPy values are converted; lists and tuples are refused (as JAX
    refuses them), so a malformed batch is never silently stacked. `layout` says what the
    entries are (`"(n_units,)"`); the shape error then names it.
    """
    if isinstance(action, (list, tuple)):
        raise ValueError(
            f"{owner}: action must be an array of shape {expected_shape}, got a {type(action).__name__} "
            f"of {len(action)} entries; pass jnp.asarray(action)"
        )
    if not isinstance(action, (jax.Array, np.ndarray, np.generic, bool, int, float)):
        raise ValueError(
            f"{owner}: action must be an array of shape {expected_shape}, got {type(action).__name__}"
        )
    action = jnp.asarray(action)
    if action.shape != tuple(expected_shape) and layout is not None:
        raise ValueError(f"{owner}: action must have shape {tuple(expected_shape)} = {layout}, got {action.shape}")
    if action.shape != tuple(expected_shape):
        raise ValueError(
            f"{owner}: action has shape {action.shape} but the action space expects shape {tuple(expected_shape)}"
        )
    return action


def neutral_action(low: ArrayLike, high: ArrayLike, shape: tuple[int, ...]) -> Array:
    """0 clipped into `[low, high]` entrywise, broadcast to `shape` (float32)."""
    low = jnp.broadcast_to(jnp.asarray(low, jnp.float32), shape)
    high = jnp.broadcast_to(jnp.asarray(high, jnp.float32), shape)
    return jnp.clip(jnp.zeros(shape, jnp.float32), low, high)


def drop_ignored_entries(
    action: Shaped[Array, "*shape"], neutral: Shaped[Array, "..."], ignored: Any, owner: str
) -> Shaped[Array, "*shape"]:
    """`action` with the entries an env ignores (`ignored`, a host-side boolean mask of
    the action's shape, or None for none) set to their neutral value (`neutral`, of the
    action's shape or broadcastable to it).

    When every entry is ignored the result does not depend on `action` at all, so tracing
    drops whatever produced it; otherwise a select with a constant mask, which XLA folds.
    """
    if ignored is None:
        return action
    mask = np.asarray(ignored)
    if mask.dtype != np.bool_ or mask.shape != tuple(action.shape):
        raise ValueError(
            f"{owner}: ignored_action_entries must be None or a boolean array of the action's shape "
            f"{tuple(action.shape)}, got {mask.dtype} of shape {mask.shape}"
        )
    if not mask.any():
        return action
    fill = jnp.broadcast_to(jnp.asarray(neutral, action.dtype), action.shape)
    if mask.all():
        return fill
    return jnp.where(mask, fill, action)


def replace_non_finite(
    values: Shaped[Array, "*shape"], neutral: ArrayLike
) -> tuple[Shaped[Array, "*shape"], Bool[Array, ""]]:
    """`(values with every non-finite entry replaced by neutral, whether any was)`.

    Integer and boolean arrays are always finite and pass through unchanged.
    """
    if not jnp.issubdtype(values.dtype, jnp.inexact):
        return values, jnp.asarray(False)
    finite = jnp.isfinite(values)
    clean = jnp.where(finite, values, jnp.asarray(neutral, values.dtype))
    return clean, ~jnp.all(finite)


def flag_invalid_action(info: dict[str, Array], invalid: Bool[Array, ""]) -> dict[str, Array]:
    """`info` with `invalid_action` set (or-ed with an inner env's flag) and, where the
    env reports `is_safe`, the step marked unsafe."""
    if INVALID_ACTION_KEY in info:
        invalid = invalid | info[INVALID_ACTION_KEY]
    info = {**info, INVALID_ACTION_KEY: invalid}
    if "is_safe" in info:
        info["is_safe"] = info["is_safe"] & ~invalid
    return info


def flag_invalid_profiles(info: dict[str, Array], params: Any) -> dict[str, Array]:
    """`info` with `invalid_load_profiles` when `params` carry that flag (params whose
    `with_load_profiles` replaced non-finite values inside `jit`)."""
    flag = getattr(params, INVALID_PROFILES_KEY, None)
    if flag is None:
        return info
    return {**info, INVALID_PROFILES_KEY: flag}


def params_class(method: Callable, name: str = "params") -> type | None:
    """The class annotated on `method`'s `params` argument, or None when it is not
    annotated with a class."""
    try:
        annotation = inspect.signature(method).parameters[name].annotation
    except (KeyError, TypeError, ValueError):
        return None
    if annotation is inspect.Parameter.empty or not isinstance(annotation, type):
        return None
    return annotation


def check_params(params: Any, expected: type | None, owner: str) -> None:
    """One-line `TypeError` when `params` is not an instance of `expected`."""
    if expected is not None and not isinstance(params, expected):
        raise TypeError(
            f"{owner}: params must be {expected.__name__} (from the env's make_*_params factory or "
            f"default_params()), got {type(params).__name__}"
        )


def structural_hash(module: eqx.Module) -> int:
    """Hash of a module's tree structure, static fields and leaf shapes/dtypes, never of
    array values.

    Modules that hold arrays (wrappers with bound params, multi-agent adapters) use it,
    so their bound methods can be handed to `jax.jit`, which hashes the function it
    compiles. Equal modules hash equal; modules that differ only in array values collide
    and are told apart by `==`.
    """
    leaves, treedef = jax.tree.flatten(module)
    signature = tuple(
        (jnp.shape(leaf), str(jnp.result_type(leaf))) if eqx.is_array(leaf) else _hashable(leaf)
        for leaf in leaves
    )
    return hash((type(module), treedef, signature))


def _hashable(leaf: Any) -> Any:
    try:
        hash(leaf)
    except TypeError:
        return type(leaf)
    return leaf


def check_profile_table(
    owner: str,
    name: str,
    values: ArrayLike,
    n_columns: int,
    *,
    columns: str | None = None,
    column_word: str = "column",
    dtype_word: str = "real numbers",
) -> None:
    """Raise a one-line `ValueError` unless `values` is a real `(T, n_columns)` table
    with `T >= 1`; when its values are concrete (not traced), they must also be finite
    (the message names the first bad entry as `row t, <column_word> j`). `columns`
    names the column count in the message (`"(T, n_loads) = (T, 5)"`); `dtype_word` what
    a bad dtype is told it must be."""
    traced = isinstance(values, jax.core.Tracer)
    # Host values through NumPy: it also names dtypes JAX has none for (strings, objects).
    host = None if traced else np.asarray(values)
    shape = tuple(jnp.shape(values) if host is None else host.shape)
    dtype = jnp.result_type(values) if host is None else host.dtype
    if not np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"{owner}: {name} must be {dtype_word}, got dtype {dtype}")
    if len(shape) != 2 or shape[1] != n_columns or shape[0] < 1:
        expected = f"(T, {columns}) = (T, {n_columns})" if columns else f"(T, {n_columns})"
        raise ValueError(f"{owner}: {name} must have shape {expected} with T >= 1, got shape {shape}")
    if host is not None:
        bad = ~np.isfinite(host)
        if bad.any():
            row, col = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"{owner}: {name} must be finite; found {host[row, col]} at row {row}, {column_word} {col} "
                f"({int(bad.sum())} non-finite values in all)"
            )


def checked_profiles(
    owner: str, name: str, values: ArrayLike, n_columns: int
) -> tuple[Array, Bool[Array, ""]]:
    """Replacement load profiles for a params' `with_load_profiles`, checked where possible.

    Shape and dtype are known on the host even under `jit`, concrete values outside it:
    `check_profile_table` raises for either. Traced values cannot raise: their
    non-finite entries become 0 and the returned flag says so. Returns
    `(float32 profiles, any entry replaced)`.
    """
    check_profile_table(owner, name, values, n_columns)
    return replace_non_finite(jnp.asarray(values, jnp.float32), 0.0)
