"""`Transition`: the one result of a single-agent wrapper's step, whatever the layer.

Every wrapper (bound or outer) computes `transition(key, state, action)` and its
`stop_gradient` twin `transition_auto_reset`; an outer wrapper builds its transition from
the inner one's. The reference's step tuples are views of it, laid out once per stack by
the innermost bound wrapper: `LogWrapper` and `SauteWrapper` show the 5-tuple
`(obs, state, reward, done, info)`, `SafeRLWrapper` the 6-tuple
`(obs, state, reward, costs, done, info)`. Trainers and the conformance kit read the
transition, so nothing downstream branches on the tuple's length.
"""

import abc
from collections.abc import Callable
from typing import Any, final

import equinox as eqx
import jax
from jaxtyping import Array, ArrayLike, Bool, Float
from powerzoojax.core._types import Info, Key


@final
class Transition(eqx.Module):
    """One step of a wrapper stack.

    **Arguments:**

    - `obs`: the next observation (the next episode's first one on a terminal step).
    - `state`: the wrapper's next state.
    - `reward`: float32 scalar.
    - `costs`: float32 `(k,)`, the cost channels the stack reports
      (`reported_constraint_names`): every channel of the env under a `LogWrapper`, the
      selected ones under a `SafeRLWrapper` or `SauteWrapper`; `(0,)` when there are none.
      The same values as `info["constraint_costs"]`.
    - `done`: bool scalar, the episode ended with this step.
    - `info`: dict of arrays.
    """

    obs: Float[Array, "..."]
    state: Any
    reward: Float[Array, ""]
    costs: Float[Array, " k"]
    done: Bool[Array, ""]
    info: Info

    def step_tuple(self, with_costs: bool) -> tuple:
        """The reference's step tuple of this transition.

        **Arguments:**

        - `with_costs`: whether the layout carries the cost vector (a `SafeRLWrapper` stack).

        **Returns:**

        `(obs, state, reward, costs, done, info)` with `with_costs`, else
        `(obs, state, reward, done, info)`.
        """
        if with_costs:
            return self.obs, self.state, self.reward, self.costs, self.done, self.info
        return self.obs, self.state, self.reward, self.done, self.info

    def kernel_tuple(self) -> tuple:
        """This transition in the rollout kernel's `step_fn` form, the same for every stack.

        **Returns:**

        `(obs, state, reward, costs, done, info)`, the env contract's order.
        """
        return self.obs, self.state, self.reward, self.costs, self.done, self.info

    def stop_state_gradient(self) -> "Transition":
        """This transition with `stop_gradient` on the observation and the state, so no
        gradient crosses an episode boundary.

        **Returns:**

        A `Transition` with the same reward, costs, flag and info.
        """
        return Transition(
            jax.lax.stop_gradient(self.obs), jax.lax.stop_gradient(self.state), self.reward, self.costs, self.done,
            self.info,
        )


class AbstractWrapper(eqx.Module):
    """What every single-agent wrapper shares: the public `step` / `step_auto_reset` are
    views of the abstract `transition` / `transition_auto_reset`, laid out by `emits_costs`."""

    @property
    def emits_costs(self) -> bool:
        """Layout of the public step tuple: True for the 6-tuple with the costs (a
        `SafeRLWrapper` stack), False for the 5-tuple. Trainers read `transition` instead."""
        return False

    @abc.abstractmethod
    def reset(self, key: Key) -> tuple[Any, Any]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)`: the first observation and the wrapper's state.
        """

    @abc.abstractmethod
    def transition(self, key: Key, state: Any, action: ArrayLike) -> Transition:
        """One step with auto-reset (gradients flow within an episode).

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the wrapper's state.
        - `action`: the agent's action.

        **Returns:**

        A [`Transition`][powerzoojax.rl.wrappers.Transition].
        """

    @abc.abstractmethod
    def transition_auto_reset(self, key: Key, state: Any, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on the observation and the state.

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        A [`Transition`][powerzoojax.rl.wrappers.Transition].
        """

    def step(self, key: Key, state: Any, action: ArrayLike) -> tuple:
        """One transition with auto-reset, as the reference's tuple.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the wrapper's state.
        - `action`: the agent's action.

        **Returns:**

        `(obs, state, reward, done, info)`, or `(obs, state, reward, costs, done, info)`
        when `emits_costs` (a `SafeRLWrapper` stack).
        """
        return self.transition(key, state, action).step_tuple(self.emits_costs)

    def step_auto_reset(self, key: Key, state: Any, action: ArrayLike) -> tuple:
        """`step` with `stop_gradient` on the observation and the state.

        **Arguments:**

        - `key`, `state`, `action`: as for `step`.

        **Returns:**

        The tuple of `step`.
        """
        return self.transition_auto_reset(key, state, action).step_tuple(self.emits_costs)


def transition_step(wrapper: Any, *, differentiable: bool = False) -> Callable[[Key, Any, Any], tuple]:
    """A wrapper's transition in the rollout kernel's `step_fn` form.

    **Arguments:**

    - `wrapper`: a single-agent wrapper.
    - `differentiable`: `transition` (gradients flow within an episode) instead of
      `transition_auto_reset`.

    **Returns:**

    `step_fn(key, state, action) -> (obs, state, reward, costs, done, info)`, so the
    kernel's stacked outputs are `(obs, reward, costs, done, info, ...)` for every stack.
    """
    transition = wrapper.transition if differentiable else wrapper.transition_auto_reset

    def step_fn(key: Key, state: Any, action: Any) -> tuple:
        return transition(key, state, action).kernel_tuple()

    return step_fn
