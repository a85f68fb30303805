"""Three-phase distribution env: the agent sets DER active power per bus and phase of an"""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.core import EnvParams, EnvState, Invariant, stack_costs, time_features
from powerzoojax.core._types import FloatScalar, Info, Key, where
from powerzoojax.core._validation import finite_scalar
from powerzoojax.grid.distribution._feeder import RadialFeederEnv, validate_feeder_options
from powerzoojax.grid.distribution._invariants import three_phase_laws
from powerzoojax.grid.resources._bundle import observe_bundles, reset_bundles
from powerzoojax.grid.resources._invariants import bundle_laws
from powerzoojax.physics import (
    Radial3PhaseFlow,
    Radial3PhaseNetwork,
    make_radial_3phase_network,
    radial_3phase_power_flow,
)

DIST_3PHASE_CONSTRAINT_NAMES = ("voltage_violation", "thermal_overload", "vuf_violation", "resource")

_UNLIMITED_MVA = 1.0e12


class DistGrid3PhaseState(EnvState):
    """Three-phase state; bus-phase vectors over non-reference buses, line-phase vectors over
    lines (ABC interleaved).

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `v_mag`: `(n_bus_phases,)` voltage magnitudes [p.u.].
    - `V_real`, `V_imag`: `(n_bus_phases,)` voltage phasors [p.u.].
    - `P_branch`, `Q_branch`: `(n_line_phases,)` branch flows [p.u.].
    - `p_loss_total`: total losses [p.u.].
    - `is_safe`: no limit violated on the last step.
    - `n_violations`: violations on the last step.
    - `total_cost`: cost of the last step.
    - `resource_states`: the bundles' states.
    """

    v_mag: Float[Array, " n_bus_phases"]
    V_real: Float[Array, " n_bus_phases"]
    V_imag: Float[Array, " n_bus_phases"]
    P_branch: Float[Array, " n_line_phases"]
    Q_branch: Float[Array, " n_line_phases"]
    p_loss_total: Float[Array, ""]
    is_safe: Bool[Array, ""]
    n_violations: Int[Array, ""]
    total_cost: Float[Array, ""]
    resource_states: tuple = ()


class DistGrid3PhaseParams(EnvParams):
    """Params of [`DistGrid3PhaseEnv`][powerzoojax.grid.distribution.DistGrid3PhaseEnv]; build
    with [`make_dist_3phase_params`][powerzoojax.grid.distribution.make_dist_3phase_params].

    **Arguments:**

    - `network`: the [`Radial3PhaseNetwork`][powerzoojax.physics.Radial3PhaseNetwork].
    - `p_load_profiles`, `q_load_profiles`: `(T, n_nodes, 3)` per-phase net loads [p.u.].
    - `phase_cap_mva`: `(n_branches, 3)` per-phase rating of each branch (BFS order) [MVA];
      huge where unlimited.
    - `p_load_ref`, `q_load_ref`: observation normalisers.
    - `v_min`, `v_max`: voltage band [p.u.].
    - `vuf_max`: largest voltage unbalance [%].
    - `loss_penalty_weight`: weight of the losses in the reward.
    - `der_low`, `der_high`: bounds of the DER actions [p.u.].
    - `bfs_tol`: sweep tolerance.
    - `nonref_idx`: `(n_nonref,)` the non-reference buses.
    - `branch_of_line`: `(n_lines,)` position in BFS branch order of each input line.
    - `three_phase_bus`: `(n_nodes,)` buses with all three phases.
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `base_mva`: system base [MVA] (static).
    - `steps_per_day`: steps in one day (static).
    - `bfs_max_iter`: sweep budget (static).
    - `include_der`: the action has per-bus-phase DER entries (static).
    - `resources`: tuple of bundles, P and Q split ⅓ per phase.
    """

    network: Radial3PhaseNetwork
    p_load_profiles: Float[Array, "n_profile_steps n_nodes 3"]
    q_load_profiles: Float[Array, "n_profile_steps n_nodes 3"]
    # Per-phase rating [MVA] of each branch (BFS order); huge where unlimited.
    phase_cap_mva: Float[Array, "n_branches 3"]
    p_load_ref: Float[Array, ""]
    q_load_ref: Float[Array, ""]
    v_min: Float[Array, ""]
    v_max: Float[Array, ""]
    vuf_max: Float[Array, ""]
    loss_penalty_weight: Float[Array, ""]
    der_low: Float[Array, ""]
    der_high: Float[Array, ""]
    bfs_tol: Float[Array, ""]
    nonref_idx: Int[Array, " n_nonref"]
    # Position in BFS branch order of each input line.
    branch_of_line: Int[Array, " n_lines"]
    three_phase_bus: Bool[Array, " n_nodes"]
    base_mva: float = eqx.field(static=True, default=10.0, kw_only=True)
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)
    bfs_max_iter: int = eqx.field(static=True, default=100, kw_only=True)
    include_der: bool = eqx.field(static=True, default=True, kw_only=True)
    # Resource bundles (eqx Modules; see powerzoojax.grid.resources), P and Q split ⅓ per phase.
    resources: tuple = eqx.field(default=(), kw_only=True)


def _finite_scalar(name: str, value: Any, *, positive: bool = False, non_negative: bool = False) -> float:
    return finite_scalar("make_dist_3phase_params", name, value, positive=positive, non_negative=non_negative)


def _bus_phase_profiles(name: str, value: ArrayLike, n_nodes: int, ref_bus: int) -> np.ndarray:
    rows = np.asarray(value)
    width = 3 * (n_nodes - 1)
    if rows.ndim == 1:
        rows = rows[None, :]
    if rows.ndim != 2 or rows.shape[1] != width or rows.shape[0] < 1 or not np.issubdtype(rows.dtype, np.number):
        raise ValueError(
            f"make_dist_3phase_params: {name} must be real with shape (T, 3 (n_nodes - 1)) = (T, {width}), "
            f"got {rows.dtype} with shape {np.asarray(value).shape}"
        )
    if not np.all(np.isfinite(rows)):
        t, k = (int(i) for i in np.argwhere(~np.isfinite(rows))[0])
        raise ValueError(f"make_dist_3phase_params: {name} must be finite; found {rows[t, k]} at row {t}, column {k}")
    full = np.zeros((rows.shape[0], n_nodes, 3), np.float64)
    nonref = [i for i in range(n_nodes) if i != ref_bus]
    full[:, nonref, :] = rows.reshape(rows.shape[0], n_nodes - 1, 3)
    return full


def make_dist_3phase_params(
    n_nodes: int,
    from_nodes: ArrayLike,
    to_nodes: ArrayLike,
    Z_3ph_pu: ArrayLike,  # noqa: N803 - the reference's name
    load_P_3ph: ArrayLike,  # noqa: N803
    load_Q_3ph: ArrayLike,  # noqa: N803
    ref_bus: int = 0,
    v_ref_mag: float | int = 1.0,
    v_min: float | int = 0.90,
    v_max: float | int = 1.10,
    vuf_max: float | int = 2.0,
    max_steps: int = 48,
    steps_per_day: int = 48,
    base_mva: float | int = 10.0,
    loss_penalty_weight: float | int = 0.1,
    line_cap: ArrayLike | None = None,
    resources: tuple = (),
    include_der: bool = True,
    delta_t_hours: float | int = 0.5,
    der_limit_pu: float | int = 0.1,
    bfs_max_iter: int = 100,
    bfs_tol: float | int = 1e-6,
) -> DistGrid3PhaseParams:
    """Validate inputs on the host and build
    [`DistGrid3PhaseParams`][powerzoojax.grid.distribution.DistGrid3PhaseParams].

    **Arguments:**

    - `n_nodes`: number of buses `N`.
    - `from_nodes`, `to_nodes`: 0-based bus indices of the N − 1 lines of a strict tree.
    - `Z_3ph_pu`: `(N − 1, 3, 3)` complex series impedances [p.u.].
    - `load_P_3ph`, `load_Q_3ph`: `(T, 3 (N − 1))` per-phase net loads [p.u.] (order as in
      [`DistGrid3PhaseEnv`][powerzoojax.grid.distribution.DistGrid3PhaseEnv]).
    - `ref_bus`: 0-based reference bus.
    - `v_ref_mag`: reference voltage [p.u.].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `vuf_max`: largest voltage unbalance [%].
    - `max_steps`: episode length [steps].
    - `steps_per_day`: steps in one day.
    - `base_mva`: system base [MVA].
    - `loss_penalty_weight`: weight of the losses in the reward.
    - `line_cap`: `(N − 1,)` three-phase line ratings [MVA], 0 or `None` = unlimited.
    - `resources`: tuple of [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle].
    - `include_der`: add per-bus-phase DER entries to the action.
    - `delta_t_hours`: step length [hours].
    - `der_limit_pu`: DER limit [p.u.].
    - `bfs_max_iter`: sweep budget.
    - `bfs_tol`: sweep tolerance.

    **Returns:**

    [`DistGrid3PhaseParams`][powerzoojax.grid.distribution.DistGrid3PhaseParams]. Raises
    `ValueError` naming a bad value, `TypeError` for a resource that is not a bundle or a
    non-bool `include_der`.
    """
    opts = validate_feeder_options(
        "make_dist_3phase_params", n_nodes, max_steps=max_steps, steps_per_day=steps_per_day,
        bfs_max_iter=bfs_max_iter, delta_t_hours=delta_t_hours, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, der_limit_pu=der_limit_pu, bfs_tol=bfs_tol,
        resources=resources, include_der=include_der,
    )
    base_mva = _finite_scalar("base_mva", base_mva, positive=True)
    vuf_max = _finite_scalar("vuf_max", vuf_max, non_negative=True)

    network = make_radial_3phase_network(n_nodes, from_nodes, to_nodes, Z_3ph_pu, ref_bus, v_ref_mag)
    p_rows = _bus_phase_profiles("load_P_3ph", load_P_3ph, n_nodes, ref_bus)
    q_rows = _bus_phase_profiles("load_Q_3ph", load_Q_3ph, n_nodes, ref_bus)
    if p_rows.shape != q_rows.shape:
        raise ValueError(
            f"make_dist_3phase_params: load_P_3ph and load_Q_3ph must have the same number of rows, "
            f"got {p_rows.shape[0]} and {q_rows.shape[0]}"
        )
    n_lines = n_nodes - 1
    if line_cap is None:
        caps = np.zeros(n_lines)
    else:
        caps = np.asarray(line_cap, np.float64)
        if caps.shape != (n_lines,) or not np.all(np.isfinite(caps)):
            raise ValueError(
                f"make_dist_3phase_params: line_cap must be finite with shape (n_lines,) = ({n_lines},), got shape {caps.shape}"
            )
    line_idx = np.asarray(network.line_idx)
    phases = np.asarray(network.branch_phase_mask)
    phase_count = np.maximum(phases.sum(axis=1), 1)
    branch_caps = caps[line_idx]
    per_phase = np.where(branch_caps > 0, branch_caps / phase_count, _UNLIMITED_MVA)
    phase_cap = np.where(phases, per_phase[:, None], _UNLIMITED_MVA)

    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return DistGrid3PhaseParams(
        network=network,
        p_load_profiles=f32(p_rows),
        q_load_profiles=f32(q_rows),
        phase_cap_mva=f32(phase_cap),
        p_load_ref=f32(max(float(p_rows[0].sum()), 1e-8)),
        q_load_ref=f32(max(float(q_rows[0].sum()), 1e-8)),
        v_min=f32(opts.v_min),
        v_max=f32(opts.v_max),
        vuf_max=f32(vuf_max),
        loss_penalty_weight=f32(opts.loss_penalty_weight),
        der_low=f32(-opts.der_limit_pu),
        der_high=f32(opts.der_limit_pu),
        bfs_tol=f32(opts.bfs_tol),
        nonref_idx=jnp.asarray([i for i in range(n_nodes) if i != ref_bus], jnp.int32),
        branch_of_line=jnp.asarray(np.argsort(line_idx), jnp.int32),
        three_phase_bus=jnp.asarray(np.asarray(network.phase_mask).all(axis=1)),
        max_steps=opts.max_steps,
        delta_t_hours=opts.delta_t_hours,
        base_mva=base_mva,
        steps_per_day=opts.steps_per_day,
        bfs_max_iter=opts.bfs_max_iter,
        include_der=opts.include_der,
        resources=opts.resources,
    )


class DistGrid3PhaseEnv(RadialFeederEnv):
    """Unbalanced three-phase feeder env.

    unbalanced radial feeder, the network is [`powerzoojax.physics.radial_3phase_power_flow`][powerzoojax.physics.radial_3phase_power_flow].

    N buses (one reference bus held at `v_ref_mag` balanced), L = N − 1 lines, in the
    order given to [`make_dist_3phase_params`][powerzoojax.grid.distribution.make_dist_3phase_params]. Bus-phase vectors of length 3(N − 1)
    list the non-reference buses in index order, phases A, B, C interleaved. Powers are per
    phase, per unit on `base_mva`.

    Observation `(9N + 6L + 2,)` float32, unbounded:
      `(|V| − 1)/0.1` for phase A of every bus, then B, then C (3N, reference bus included) ·
      receiving-end `P` per line for phase A, B, C (3L, `/ p_load_ref`) · `Q` likewise
      (3L, `/ q_load_ref`) · `p_load` per phase (3N, reference bus 0, `/ p_load_ref`) ·
      `q_load` likewise (3N) · `sin φ, cos φ`; `p_load_ref = max(Σ row-0 P, 1e-8)`.
    Action `(3(N − 1),)` in [-1, 1] (clipped; `(0,)` with `include_der=False`): DER active
      injection per bus-phase mapped onto `[der_low, der_high] = ∓0.1` p.u.
    Reward `−loss_penalty_weight · p_loss_MW` (`base_mva · Σ` per-phase series losses).
    Costs (non-negative, in this order): `voltage_violation` (bus-phases outside
      `[v_min, v_max]`), `thermal_overload` (line-phases whose larger end `|S|` exceeds
      `line_cap / phase count`; cap 0 = unlimited), `vuf_violation` (three-phase buses with
      Fortescue VUF above `vuf_max` %), `resource` (0 until bundles land). A sweep that
      fails to converge counts every bus-phase as a voltage violation.
    Termination: `done` when `time_step + 1 >= max_steps`; auto-reset inside `step`.
      Loads come from row `t mod T`; reset solves row 0 with no DER (deterministic).
    """
    CONSTRAINT_NAMES = DIST_3PHASE_CONSTRAINT_NAMES
    DER_LAYOUT = "3 (n_nodes - 1)"

    def physics_invariants(self, params: DistGrid3PhaseParams) -> tuple[Invariant, ...]:
        # Kirchhoff's laws per phase at every converged sweep; each bundle's own laws.
        return three_phase_laws(params) + bundle_laws(params.resources)

    def _n_der(self, params: DistGrid3PhaseParams) -> int:
        return 3 * (params.network.n_nodes - 1) if params.include_der else 0

    def _core_obs_dim(self, params: DistGrid3PhaseParams) -> int:
        return 9 * params.network.n_nodes + 6 * params.network.n_branches + 2

    def _state(
        self, flow: Radial3PhaseFlow, params: DistGrid3PhaseParams, **fields: Any
    ) -> DistGrid3PhaseState:
        nonref = params.nonref_idx
        by_line = params.branch_of_line
        return DistGrid3PhaseState(
            v_mag=flow.v_mag[nonref].reshape(-1),
            V_real=jnp.real(flow.v[nonref]).reshape(-1),
            V_imag=jnp.imag(flow.v[nonref]).reshape(-1),
            P_branch=flow.p_branch[by_line].reshape(-1),
            Q_branch=flow.q_branch[by_line].reshape(-1),
            p_loss_total=jnp.sum(flow.p_loss),
            **fields,
        )

    def _obs(self, state: DistGrid3PhaseState, params: DistGrid3PhaseParams) -> Float[Array, " obs_dim"]:
        p_load, q_load = self._loads(state.time_step, params)
        v_ref_mag = jnp.abs(params.network.v_ref[params.network.ref_bus])
        v_full = jnp.broadcast_to(v_ref_mag, (params.network.n_nodes, 3))
        v_full = v_full.at[params.nonref_idx].set(state.v_mag.reshape(-1, 3))
        inv_p = 1.0 / params.p_load_ref
        inv_q = 1.0 / params.q_load_ref
        return jnp.concatenate(
            [
                ((v_full - 1.0) * 10.0).T.reshape(-1),
                (state.P_branch.reshape(-1, 3) * inv_p).T.reshape(-1),
                (state.Q_branch.reshape(-1, 3) * inv_q).T.reshape(-1),
                (p_load * inv_p).T.reshape(-1),
                (q_load * inv_q).T.reshape(-1),
                time_features(state.time_step, params.steps_per_day),
                observe_bundles(params.resources, state.resource_states, {"time_step": state.time_step}),
            ]
        )

    def observe(self, state: DistGrid3PhaseState, params: DistGrid3PhaseParams) -> Float[Array, " obs_dim"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: DistGrid3PhaseParams) -> tuple[Float[Array, " obs_dim"], DistGrid3PhaseState]:
        p_load, q_load = self._loads(jnp.asarray(0, jnp.int32), params)
        flow = radial_3phase_power_flow(params.network, p_load, q_load, params.bfs_max_iter, params.bfs_tol)
        state = self._state(
            flow,
            params,
            time_step=jnp.asarray(0, jnp.int32),
            done=jnp.asarray(False),
            is_safe=jnp.asarray(True),
            n_violations=jnp.asarray(0, jnp.int32),
            total_cost=jnp.asarray(0.0, jnp.float32),
            resource_states=reset_bundles(params.resources, key),
        )
        return self._obs(state, params), state

    def step_env(
        self,
        key: Key,
        state: DistGrid3PhaseState,
        action: Float[Array | np.ndarray, " action_dim"],
        params: DistGrid3PhaseParams,
    ) -> tuple[Float[Array, " obs_dim"], DistGrid3PhaseState, FloatScalar, Float[Array, "4"], Bool[Array, ""], Info]:
        network = params.network
        action = jnp.asarray(action, jnp.float32)
        p_load, q_load = self._loads(state.time_step, params)
        der, bundles = self._decode_action(action, state.resource_states, {"time_step": state.time_step}, params)
        p_net, q_net = p_load, q_load
        if params.include_der:
            # Every bus-phase but the reference bus's, in bus order: a static insertion,
            # not a scatter.
            ref = network.ref_bus
            der = der.reshape(-1, 3)
            p_net = p_net - jnp.concatenate([der[:ref], jnp.zeros((1, 3), der.dtype), der[ref:]])
        if params.resources:
            per_phase = 1.0 / (3.0 * params.base_mva)
            p_net = p_net - (bundles.p_bus_mw * per_phase)[:, None]
            q_net = q_net - (bundles.q_bus_mvar * per_phase)[:, None]
        flow = radial_3phase_power_flow(network, p_net, q_net, params.bfs_max_iter, params.bfs_tol)

        mask = network.phase_mask
        v = flow.v_mag
        out_of_band = mask & ((v > params.v_max) | (v < params.v_min))
        n_voltage = where(flow.converged, jnp.sum(out_of_band), jnp.sum(mask)).astype(jnp.int32)
        voltage_excess = jnp.sum(where(mask, jnp.maximum(v - params.v_max, 0.0) + jnp.maximum(params.v_min - v, 0.0), 0.0))
        vuf = where(params.three_phase_bus, flow.vuf_percent, 0.0)
        n_vuf = jnp.sum(vuf > params.vuf_max).astype(jnp.int32)
        vuf_excess = jnp.sum(jnp.maximum(vuf - params.vuf_max, 0.0))
        current_conj = jnp.conj(flow.i_branch)
        s_send = jnp.abs(flow.v[network.send_idx] * current_conj)
        s_recv = jnp.abs(flow.v[network.recv_idx] * current_conj)
        s_mva = params.base_mva * jnp.maximum(s_send, s_recv)
        n_thermal = jnp.sum(s_mva > params.phase_cap_mva).astype(jnp.int32)
        mva_excess = jnp.sum(jnp.maximum(s_mva - params.phase_cap_mva, 0.0))

        p_loss_mw = params.base_mva * jnp.sum(flow.p_loss)
        q_loss_mvar = params.base_mva * jnp.sum(flow.q_loss)
        reward = -params.loss_penalty_weight * p_loss_mw
        n_violations = n_voltage + n_thermal + n_vuf
        is_safe = n_violations == 0
        counts = [c.astype(jnp.float32) for c in (n_voltage, n_thermal, n_vuf)]
        costs = stack_costs(*counts, bundles.cost_sum)
        max_vuf = jnp.max(vuf)

        time_step = state.time_step + 1
        next_state = self._state(
            flow,
            params,
            time_step=time_step,
            done=time_step >= params.max_steps,
            is_safe=is_safe,
            n_violations=n_violations,
            total_cost=state.total_cost + counts[0] + counts[1] + counts[2],
            resource_states=bundles.states,
        )
        done = next_state.done
        info = {
            "cost_voltage_violation": counts[0],
            "cost_thermal_overload": counts[1],
            "cost_vuf_violation": counts[2],
            "cost_resource": bundles.cost_sum,
            "cost_continuous": voltage_excess + vuf_excess + mva_excess,
            "cost_sum": counts[0] + counts[1] + counts[2] + bundles.cost_sum,
            "is_safe": is_safe,
            "goal_met": is_safe,
            "n_violations": n_violations,
            "p_loss_MW": p_loss_mw,
            "q_loss_MVAr": q_loss_mvar,
            "max_vuf_percent": max_vuf,
            "bfs_converged": flow.converged,
            "bfs_n_iter": flow.n_iter,
            "bfs_residual": flow.residual,
        }
        return self._obs(next_state, params), next_state, reward, costs, done, info
