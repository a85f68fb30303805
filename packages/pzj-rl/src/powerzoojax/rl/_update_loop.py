"""The outer training loop every trainer shares: periodic evaluation inside the compiled
update, chunked runs for checkpointing, and whole runs as one scan over updates.

A trainer provides ``init(key)``, ``update(state) -> (state, metrics)``, ``n_updates``
and ``eval_every``; its data always comes through the one rollout kernel.
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array, PyTree

from powerzoojax.core import Key


def nan_like(tree: PyTree) -> PyTree:
    return jax.tree.map(lambda x: jnp.full(x.shape, jnp.nan, x.dtype), tree)


def _nan_of_shape(fn: Callable[..., Any], *args: Any) -> PyTree:
    """NaNs shaped like ``fn(*args)``'s output, without running it."""
    return nan_like(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(fn, *args)))


class UpdateLoop:
    n_updates: int
    eval_every: int

    def init(self, key: Key) -> Any:
        raise NotImplementedError

    def update(self, state: Any) -> tuple[Any, dict[str, Array]]:
        raise NotImplementedError

    def maybe_evaluate(self, update_index: Array, evaluate: Callable[..., dict[str, Array]], *args: Any) -> dict[str, Array]:
        """``evaluate(*args)`` every ``eval_every`` updates and after the last; NaN metrics
        otherwise, so the metrics pytree has one shape on every update."""
        if not self.eval_every:
            return {}
        due = ((update_index + 1) % self.eval_every == 0) | (update_index + 1 == self.n_updates)
        return jax.lax.cond(due, lambda: evaluate(*args), lambda: _nan_of_shape(evaluate, *args))

    def run_chunk(self, state: Any, n_updates: int) -> tuple[Any, dict[str, Array]]:
        """``n_updates`` updates in one scan; updates past the run's total are skipped (NaN metrics)."""

        def guarded(s, _):
            return jax.lax.cond(
                s.update < self.n_updates, self.update, lambda s_: (s_, _nan_of_shape(lambda x: self.update(x)[1], s_)), s
            )

        return jax.lax.scan(guarded, state, None, length=n_updates)

    def train(self, key: Key) -> tuple[Any, dict[str, Array]]:
        """A whole run from ``key``: one scan over all updates (pure; jit and vmap it freely)."""
        state = self.init(key)
        return jax.lax.scan(lambda s, _: self.update(s), state, None, length=self.n_updates)
