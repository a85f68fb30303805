"""What every bound wrapper shares: bound params, forwarded spaces, episode sums.

A bound wrapper holds an env and its params, so its `reset(key)` / `step(key, state,
action)` plug straight into `powerzoojax.core.rollout` as its `step_fn`; its
`transition` is what trainers read (see `Transition`).
"""

import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Shaped
from powerzoojax.core import Environment, EnvParams, Space
from powerzoojax.core._guard import replace_non_finite, structural_hash
from powerzoojax.rl.wrappers._transition import AbstractWrapper


class BoundWrapper(AbstractWrapper):
    """Base of the wrappers that hold an env and its params (`LogWrapper`, `SafeRLWrapper`,
    `SauteWrapper`).

    Each computes a [`Transition`][powerzoojax.rl.wrappers.Transition]; its public `step`
    is the reference's tuple of it, laid out by `emits_costs`: False (`LogWrapper`,
    `SauteWrapper`) → `(obs, state, reward, done, info)`, True (`SafeRLWrapper`) →
    `(obs, state, reward, costs, done, info)`.

    **Arguments:**

    - `env`: the [`Environment`][powerzoojax.core.Environment].
    - `params`: its params.
    """

    env: Environment
    params: EnvParams

    def __hash__(self) -> int:
        # Hash without the bound params' array values, so `jax.jit(wrapper.step)` works.
        return structural_hash(self)

    @property
    def name(self) -> str:
        """The env's name."""
        return self.env.name

    @property
    def max_steps(self) -> int:
        """Episode length of the bound params (static)."""
        return int(self.params.max_steps)

    def observation_space(self) -> Space:
        """Observation space of the env under the bound params.

        **Returns:**

        A [`Space`][powerzoojax.core.Space].
        """
        return self.env.observation_space(self.params)

    def action_space(self) -> Space:
        """Action space of the env under the bound params.

        **Returns:**

        A [`Space`][powerzoojax.core.Space].
        """
        return self.env.action_space(self.params)

    @property
    def obs_size(self) -> int:
        """Length of the (flat) observation."""
        return int(self.observation_space().shape[0])

    @property
    def num_actions(self) -> int:
        """Number of discrete actions, or the length of a continuous action."""
        return _num_actions(self.action_space())

    @property
    def action_size(self) -> int:
        """Alias of `num_actions`."""
        return self.num_actions

    def constraint_names(self) -> tuple[str, ...]:
        """All of the env's cost channels, in the env's order.

        **Returns:**

        A tuple of cost-channel names.
        """
        return self.env.constraint_names(self.params)

    @property
    def reported_constraint_names(self) -> tuple[str, ...]:
        """The channels of `Transition.costs`: all of the env's (a Safe / Sauté wrapper
        reports its selected ones)."""
        return tuple(self.constraint_names())

    @property
    def bound_wrapper(self) -> "BoundWrapper":
        """The bound wrapper at the bottom of the stack: this one."""
        return self


def _num_actions(space: Space) -> int:
    # Discrete spaces have shape () and count their choices in `n`.
    return int(space.n) if hasattr(space, "n") and not space.shape else int(space.shape[0])  # pyright: ignore[reportAttributeAccessIssue]


def accumulate(
    running: Shaped[Array, "*shape"],
    latched: Shaped[Array, "*shape"],
    increment: Shaped[Array, "*shape"],
    done: Bool[Array, ""],
) -> tuple[Shaped[Array, "*shape"], Shaped[Array, "*shape"]]:
    """Add `increment` to an episode sum; on `done` latch the total and restart from zero.

    A non-finite increment (a NaN reward from a user's reward function, say) counts as
    zero, so a latched episode statistic is never NaN. Returns `(new_running, new_latched)`.
    """
    increment, _ = replace_non_finite(increment, 0)
    total = running + increment
    return jnp.where(done, jnp.zeros_like(total), total), jnp.where(done, total, latched)


def legacy_threshold(cost_threshold: Any, cost_thresholds: Any, owner: str) -> Any:
    """The thresholds to use when a wrapper also got the reference's `cost_threshold`
    (a number or tuple): `cost_thresholds` wins; giving both different is an error."""
    if cost_threshold is None:
        return cost_thresholds
    if cost_thresholds is not None:
        raise ValueError(f"{owner}: pass cost_thresholds or the legacy cost_threshold, not both")
    return cost_threshold


class ThresholdsMixin:
    """`num_constraints`, the reported channels and the reference's single-budget
    `cost_threshold` attribute (for wrappers with `selected_constraint_names` and
    `cost_thresholds`)."""

    selected_constraint_names: tuple[str, ...]
    cost_thresholds: tuple[float, ...]

    @property
    def num_constraints(self) -> int:
        return len(self.selected_constraint_names)

    @property
    def reported_constraint_names(self) -> tuple[str, ...]:
        """The channels of `Transition.costs`: the selected ones."""
        return self.selected_constraint_names

    @property
    def cost_threshold(self) -> float | tuple[float, ...]:
        """The per-episode budget: one number when every selected channel has the same
        one (0.0 with no channel), else the tuple `cost_thresholds`."""
        if len(set(self.cost_thresholds)) <= 1:
            return self.cost_thresholds[0] if self.cost_thresholds else 0.0
        return self.cost_thresholds


def resolve_constraints(
    env: Environment,
    params: EnvParams,
    selected_names: Any,
    cost_thresholds: Any,
    owner: str,
) -> tuple[tuple[str, ...], tuple[int, ...], tuple[float, ...]]:
    """Host-side selection of cost channels and their thresholds.

    `selected_names=None` selects every channel; `cost_thresholds=None` means a
    budget of zero per selected channel; a scalar broadcasts. Returns `(names,
    indices into the env's cost vector, thresholds)`.
    """
    all_names = tuple(env.constraint_names(params))
    if selected_names is None:
        selected = all_names
    else:
        if isinstance(selected_names, str):
            selected_names = (selected_names,)
        selected = tuple(selected_names)
        unknown = [n for n in selected if n not in all_names]
        if unknown:
            raise ValueError(
                f"{owner}: unknown constraint name(s) {unknown}; {env.name} has {list(all_names)}"
            )
        duplicates = sorted({n for n in selected if selected.count(n) > 1})
        if duplicates:
            raise ValueError(f"{owner}: constraint name(s) {duplicates} selected more than once")
    indices = tuple(all_names.index(n) for n in selected)
    k = len(selected)
    if cost_thresholds is None:
        thresholds = (0.0,) * k
    else:
        try:
            if isinstance(cost_thresholds, (tuple, list)) or getattr(cost_thresholds, "ndim", 0) > 0:
                thresholds = tuple(float(v) for v in cost_thresholds)
            else:
                thresholds = (float(cost_thresholds),) * k
        except (TypeError, ValueError):
            raise ValueError(
                f"{owner}: cost_thresholds must be a number or one number per selected constraint, "
                f"got {cost_thresholds!r}"
            ) from None
        if len(thresholds) != k:
            raise ValueError(
                f"{owner}: cost_thresholds has {len(thresholds)} entries but {k} constraint(s) are "
                f"selected {list(selected)}; pass one threshold per selected constraint"
            )
        bad = [t for t in thresholds if not math.isfinite(t) or t < 0]
        if bad:
            raise ValueError(f"{owner}: cost_thresholds must be finite and >= 0, got {list(thresholds)}")
    return selected, indices, thresholds
