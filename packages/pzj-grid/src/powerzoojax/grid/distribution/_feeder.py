"""What the balanced and three-phase radial feeder envs share: spaces from the DER and
bundle dimensions, the profile row of a step, and the decoding of an action into DER
injections plus the bundles' step (composition without knowing device types).

[`DistGridEnv`][powerzoojax.grid.DistGridEnv] and [`DistGrid3PhaseEnv`][powerzoojax.grid.DistGrid3PhaseEnv]
differ in the network model, the per-bus (or per-bus-phase) layout and their costs; they
subclass [`RadialFeederEnv`][powerzoojax.grid.distribution.RadialFeederEnv] and give `_n_der` and `_core_obs_dim`.
"""

import abc
from typing import Any, ClassVar, NamedTuple

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from powerzoojax.core import Box, Environment, denormalize_action, make_box
from powerzoojax.core._validation import finite_scalar, positive_int
from powerzoojax.grid.resources._bundle import (
    BundlesStep,
    ResourceBundle,
    bundles_action_dim,
    bundles_obs_dim,
    step_bundles,
)


class FeederOptions(NamedTuple):
    """The options both feeder factories share, validated (see `validate_feeder_options`)."""

    max_steps: int
    steps_per_day: int
    bfs_max_iter: int
    delta_t_hours: float
    v_min: float
    v_max: float
    loss_penalty_weight: float
    der_limit_pu: float
    bfs_tol: float
    resources: tuple
    include_der: bool


def validate_feeder_options(
    fn: str,
    n_nodes: int,
    *,
    max_steps: Any,
    steps_per_day: Any,
    bfs_max_iter: Any,
    delta_t_hours: Any,
    v_min: Any,
    v_max: Any,
    loss_penalty_weight: Any,
    der_limit_pu: Any,
    bfs_tol: Any,
    resources: Any,
    include_der: Any,
) -> FeederOptions:
    """Host validation of the options `make_dist_params` and `make_dist_3phase_params`
    share; errors are prefixed with `fn`. Raises `ValueError` for a bad value,
    `TypeError` for a resource that is not a [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle] or a non-bool
    `include_der`."""
    max_steps = positive_int(fn, "max_steps", max_steps)
    steps_per_day = positive_int(fn, "steps_per_day", steps_per_day)
    bfs_max_iter = positive_int(fn, "bfs_max_iter", bfs_max_iter)
    delta_t_hours = finite_scalar(fn, "delta_t_hours", delta_t_hours, positive=True)
    v_min = finite_scalar(fn, "v_min", v_min, non_negative=True)
    v_max = finite_scalar(fn, "v_max", v_max, positive=True)
    if v_min >= v_max:
        raise ValueError(f"{fn}: v_min must be < v_max, got v_min={v_min}, v_max={v_max}")
    loss_penalty_weight = finite_scalar(fn, "loss_penalty_weight", loss_penalty_weight, non_negative=True)
    der_limit_pu = finite_scalar(fn, "der_limit_pu", der_limit_pu, non_negative=True)
    bfs_tol = finite_scalar(fn, "bfs_tol", bfs_tol, positive=True)
    resources = tuple(resources)
    for k, bundle in enumerate(resources):
        if not isinstance(bundle, ResourceBundle):
            raise TypeError(f"{fn}: resources[{k}] must be a ResourceBundle, got {type(bundle).__name__}")
        top = int(np.max(np.asarray(bundle.bus_idx), initial=0))
        if top >= n_nodes:
            raise ValueError(f"{fn}: resources[{k}] has bus index {top}, outside 0..{n_nodes - 1}")
    if not isinstance(include_der, (bool, np.bool_)):
        raise TypeError(f"{fn}: include_der must be a bool, got {include_der!r}")
    return FeederOptions(
        max_steps, steps_per_day, bfs_max_iter, delta_t_hours, v_min, v_max, loss_penalty_weight,
        der_limit_pu, bfs_tol, resources, bool(include_der),
    )

class RadialFeederEnv(Environment):
    """Base of the radial feeder envs; params carry `p_load_profiles, q_load_profiles`
    (rows over time), `der_low, der_high`, `include_der` and `resources`."""

    CONSTRAINT_NAMES: ClassVar[tuple[str, ...]] = ()
    # What a DER action counts, for the shape error ("n_nodes - 1", "3 (n_nodes - 1)").
    DER_LAYOUT: ClassVar[str] = ""

    @abc.abstractmethod
    def _n_der(self, params: Any) -> int:
        """Number of DER action entries (0 without `include_der`)."""

    @abc.abstractmethod
    def _core_obs_dim(self, params: Any) -> int:
        """Observation length before the bundles' observations."""

    def action_dim(self, params: Any) -> int:
        """Length of the action vector.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        The DER entries plus the bundles' action length.
        """
        return self._n_der(params) + bundles_action_dim(params.resources)

    def obs_dim(self, params: Any) -> int:
        """Length of the observation vector.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        The feeder's own entries plus the bundles' observation length.
        """
        return self._core_obs_dim(params) + bundles_obs_dim(params.resources)

    def observation_space(self, params: Any) -> Box:
        return make_box(-np.inf, np.inf, (self.obs_dim(params),))

    def action_space(self, params: Any) -> Box:
        return make_box(-1.0, 1.0, (self.action_dim(params),))

    def constraint_names(self, params: Any) -> tuple[str, ...]:
        return self.CONSTRAINT_NAMES

    def iteration_count_keys(self, params: Any) -> tuple[str, ...]:
        # The radial sweep's count of sweeps.
        return ("bfs_n_iter",)

    def _loads(
        self, time_step: Int[Array, ""], params: Any
    ) -> tuple[Float[Array, "n_nodes *phases"], Float[Array, "n_nodes *phases"]]:
        """The net load rows [p.u.] of `time_step` (profiles wrap: row `t mod T`)."""
        row = time_step % params.p_load_profiles.shape[0]
        return params.p_load_profiles[row], params.q_load_profiles[row]

    def action_layout(self, params: Any) -> str:
        der = self.DER_LAYOUT if params.include_der else "no DER"
        extra = " + bundle actions" if params.resources else ""
        return f"({der}{extra},)"

    def _decode_action(
        self, action: Float[Array, " action_dim"], resource_states: tuple, ctx: dict, params: Any
    ) -> tuple[Float[Array, " n_der"], BundlesStep]:
        """DER injections [p.u., positive = generation] from the first `_n_der` entries
        and the bundles stepped on the rest (their injections on `network.n_nodes` buses)."""
        n_der = self._n_der(params)
        der_action = action[:n_der]
        der = denormalize_action(
            der_action,
            jnp.broadcast_to(params.der_low, der_action.shape),
            jnp.broadcast_to(params.der_high, der_action.shape),
        )
        bundles = step_bundles(params.resources, resource_states, action[n_der:], ctx, params.network.n_nodes)
        return der, bundles
