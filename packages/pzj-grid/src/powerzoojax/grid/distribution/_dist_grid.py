"""Distribution grid env: the agent sets DER active power at every bus of a radial feeder,"""


import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core import EnvParams, EnvState, Invariant, stack_costs, time_features
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.core._guard import check_profile_table, checked_profiles
from powerzoojax.core._validation import finite_scalar
from powerzoojax.grid.distribution._invariants import distflow_laws
from powerzoojax.grid.distribution._feeder import RadialFeederEnv, validate_feeder_options
from powerzoojax.grid.resources._bundle import FLEX_STAT_KEYS, observe_bundles, reset_bundles
from powerzoojax.grid.resources._invariants import bundle_laws
from powerzoojax.physics import RadialFlow, RadialNetwork, make_radial_network, radial_power_flow
from powerzoojax.physics._pin import materialise

DIST_CONSTRAINT_NAMES = ("voltage_violation", "thermal_overload", "resource")

# A rating of 0 (or below) means "unlimited" in the case tables.
_UNLIMITED_MVA = 1.0e6
_COST_MODES = ("aggregate",)


class DistGridState(EnvState):
    """Distribution state (per unit on the case base unless named otherwise).

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `v_mag`: `(n_nodes,)` voltage magnitudes [p.u.].
    - `p_branch`, `q_branch`: `(n_branches,)` branch flows [p.u.].
    - `p_loss_total`: total losses [p.u.].
    - `is_safe`: no limit violated on the last step.
    - `n_violations`: violations on the last step.
    - `total_cost`: running sum of the violation counts over the episode.
    - `bfs_warm_start`: `(n_branches,)` the last sweep's loss correction, where the next
      step's sweep starts (zero after a failed sweep).
    - `resource_states`: the bundles' states.
    - `episode_batt_soc_init`: `(n_batt,)` the batteries' SOC at the episode's start.
    """

    v_mag: Float[Array, " n_nodes"]
    p_branch: Float[Array, " n_branches"]
    q_branch: Float[Array, " n_branches"]
    p_loss_total: Float[Array, ""]
    is_safe: Bool[Array, ""]
    n_violations: Int[Array, ""]
    # Running sum of the violation counts over the episode.
    total_cost: Float[Array, ""]
    # The last sweep's loss_correction: the next step's sweep starts from it (loads move
    # little between steps, so it starts closer than LinDistFlow; zero after a failed sweep).
    bfs_warm_start: Float[Array, " n_branches"]
    resource_states: tuple = ()
    episode_batt_soc_init: Float[Array, " n_batt"] = eqx.field(
        default_factory=lambda: jnp.zeros((0,), jnp.float32)
    )


class DistGridParams(EnvParams):
    """Params of [`DistGridEnv`][powerzoojax.grid.distribution.DistGridEnv]; build with
    [`make_dist_params`][powerzoojax.grid.distribution.make_dist_params].

    **Arguments:**

    - `network`: the feeder's [`RadialNetwork`][powerzoojax.physics.RadialNetwork].
    - `p_load_profiles`, `q_load_profiles`: `(T, n_nodes)` net bus loads [p.u.], row
      `t mod T` at step `t`.
    - `line_cap_mva`: `(n_branches,)` branch ratings [MVA].
    - `p_load_ref`, `q_load_ref`: observation normalisers from the case's static loads
      (unchanged when profiles are replaced, so observations stay comparable).
    - `v_slack`: substation voltage [p.u.].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `loss_penalty_weight`: weight of the losses in the reward.
    - `der_low`, `der_high`: bounds of the per-bus DER actions [p.u.].
    - `bfs_tol`: sweep tolerance.
    - `der_bus_idx`: `(n_der,)` buses of the DER actions (every bus but the slack), for
      adapters that name the DER agents.
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `base_mva`: system base [MVA] (static).
    - `steps_per_day`: steps in one day (static).
    - `bfs_max_iter`: sweep budget (static).
    - `include_der`: the action has per-bus DER entries (static).
    - `cost_mode`: accepted for the reference's signature; no effect (static).
    - `resources`: tuple of [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle].
    - `invalid_load_profiles`: set by `with_load_profiles` when non-finite values given
      inside `jit` were replaced by 0.
    """

    network: RadialNetwork
    p_load_profiles: Float[Array, "n_profile_steps n_nodes"]
    q_load_profiles: Float[Array, "n_profile_steps n_nodes"]
    line_cap_mva: Float[Array, " n_branches"]
    # Observation normalisers from the case's static loads (unchanged when profiles are
    # replaced, so observations stay comparable across scenarios).
    p_load_ref: Float[Array, ""]
    q_load_ref: Float[Array, ""]
    v_slack: Float[Array, ""]
    v_min: Float[Array, ""]
    v_max: Float[Array, ""]
    loss_penalty_weight: Float[Array, ""]
    der_low: Float[Array, ""]
    der_high: Float[Array, ""]
    bfs_tol: Float[Array, ""]
    # The buses of the DER actions (every bus but the slack, in order); the step uses
    # that layout statically, this is for adapters that name the DER agents.
    der_bus_idx: Int[Array, " n_der"]
    base_mva: float = eqx.field(static=True, default=100.0, kw_only=True)
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)
    bfs_max_iter: int = eqx.field(static=True, default=100, kw_only=True)
    include_der: bool = eqx.field(static=True, default=True, kw_only=True)
    cost_mode: str = eqx.field(static=True, default="aggregate", kw_only=True)
    # Resource bundles (eqx Modules: their sizes are static fields, their arrays leaves,
    # so params stay vmappable over device parameters).
    resources: tuple = eqx.field(default=(), kw_only=True)
    # Set by with_load_profiles: True when non-finite profile values given inside jit were
    # replaced by 0 (reported on every step as info["invalid_load_profiles"]).
    invalid_load_profiles: Bool[Array, ""] | None = eqx.field(default=None, kw_only=True)

    def with_load_profiles(
        self,
        p_load_profiles: ArrayLike,
        q_load_profiles: ArrayLike,
    ) -> "DistGridParams":
        """These params with new load profiles (usable inside `jit`/`vmap`).

        **Arguments:**

        - `p_load_profiles`, `q_load_profiles`: `(T', N)` net bus loads [p.u.].

        **Returns:**

        New [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams]. A wrong shape
        raises `ValueError`; non-finite values raise outside `jit` and are replaced by 0 inside
        it, flagged as `info["invalid_load_profiles"]` on every step.
        """
        n_nodes = self.p_load_profiles.shape[1]
        owner = "DistGridParams.with_load_profiles"
        p_profiles, p_invalid = checked_profiles(owner, "p_load_profiles", p_load_profiles, n_nodes)
        q_profiles, q_invalid = checked_profiles(owner, "q_load_profiles", q_load_profiles, n_nodes)
        if p_profiles.shape[0] != q_profiles.shape[0]:
            raise ValueError(
                f"{owner}: p_load_profiles and q_load_profiles must have the same number of rows, "
                f"got {p_profiles.shape[0]} and {q_profiles.shape[0]}"
            )
        return eqx.tree_at(
            lambda p: (p.p_load_profiles, p.q_load_profiles, p.invalid_load_profiles),
            self,
            (p_profiles, q_profiles, p_invalid | q_invalid),
            is_leaf=lambda x: x is None,
        )


def _profiles(name: str, value: ArrayLike, n_nodes: int) -> np.ndarray:
    check_profile_table("make_dist_params", name, value, n_nodes, columns="n_nodes", column_word="bus index")
    return np.asarray(value, np.float64)


def make_dist_params(
    case: CaseData,
    max_steps: int = 48,
    steps_per_day: int = 48,
    v_slack: float | int = 1.0,
    v_min: float | int = 0.90,
    v_max: float | int = 1.10,
    loss_penalty_weight: float | int = 0.1,
    resources: tuple = (),
    include_der: bool = True,
    cost_mode: str = "aggregate",
    p_load_profiles: ArrayLike | None = None,
    q_load_profiles: ArrayLike | None = None,
    delta_t_hours: float | int = 0.5,
    der_limit_pu: float | int = 0.005,
    bfs_max_iter: int = 100,
    bfs_tol: float | int = 1e-6,
) -> DistGridParams:
    """Validate inputs on the host and build [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].

    The in-service lines (`line_status > 0`) must form one tree rooted at the slack bus.

    **Arguments:**

    - `case`: the feeder.
    - `max_steps`: episode length [steps].
    - `steps_per_day`: steps in one day.
    - `v_slack`: substation voltage [p.u.].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `loss_penalty_weight`: weight of the losses in the reward.
    - `resources`: tuple of [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle]
      built against the same case.
    - `include_der`: add per-bus DER entries to the action.
    - `cost_mode`: accepted for the reference's signature; no effect.
    - `p_load_profiles`, `q_load_profiles`: `(T, N)` net bus loads [p.u. on the case base];
      `None` (both) takes the case's `node_pd, node_qd / base_mva` tiled over `max_steps`
      rows.
    - `delta_t_hours`: step length [hours].
    - `der_limit_pu`: DER limit per bus, `∓der_limit_pu` [p.u.].
    - `bfs_max_iter`: sweep budget.
    - `bfs_tol`: sweep tolerance.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams]. Raises `ValueError`
    naming a bad value, `TypeError` for an argument of the wrong type.
    """
    if not isinstance(case, CaseData):
        raise TypeError(
            f"make_dist_params: case must be a CaseData from powerzoojax.case.load_case, got {type(case).__name__}"
        )
    opts = validate_feeder_options(
        "make_dist_params", case.n_nodes, max_steps=max_steps, steps_per_day=steps_per_day,
        bfs_max_iter=bfs_max_iter, delta_t_hours=delta_t_hours, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, der_limit_pu=der_limit_pu, bfs_tol=bfs_tol,
        resources=resources, include_der=include_der,
    )
    v_slack = finite_scalar("make_dist_params", "v_slack", v_slack, positive=True)
    if cost_mode not in _COST_MODES:
        raise ValueError(f"make_dist_params: cost_mode must be one of {_COST_MODES}, got {cost_mode!r}")

    network = make_radial_network(case)
    n = case.n_nodes
    base = float(case.base_mva)
    static_p = np.asarray(case.node_pd, np.float64) / base
    static_q = np.asarray(case.node_qd, np.float64) / base
    if (p_load_profiles is None) != (q_load_profiles is None):
        raise ValueError(
            "make_dist_params: give both p_load_profiles and q_load_profiles or neither, got "
            f"p_load_profiles={'None' if p_load_profiles is None else 'an array'}, "
            f"q_load_profiles={'None' if q_load_profiles is None else 'an array'}"
        )
    if p_load_profiles is None or q_load_profiles is None:
        p_rows, q_rows = np.tile(static_p, (opts.max_steps, 1)), np.tile(static_q, (opts.max_steps, 1))
    else:
        p_rows = _profiles("p_load_profiles", p_load_profiles, n)
        q_rows = _profiles("q_load_profiles", q_load_profiles, n)
        if p_rows.shape != q_rows.shape:
            raise ValueError(
                f"make_dist_params: p_load_profiles and q_load_profiles must have the same shape, "
                f"got {p_rows.shape} and {q_rows.shape}"
            )

    caps = np.asarray(case.line_cap, np.float64)[np.asarray(network.line_idx)]
    caps = np.where(caps > 0, caps, _UNLIMITED_MVA)
    slack = int(case.slack_bus_idx)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return DistGridParams(
        network=network,
        p_load_profiles=f32(p_rows),
        q_load_profiles=f32(q_rows),
        line_cap_mva=f32(caps),
        p_load_ref=f32(max(float(static_p.sum()), 1e-8)),
        q_load_ref=f32(max(float(static_q.sum()), 1e-8)),
        v_slack=f32(v_slack),
        v_min=f32(opts.v_min),
        v_max=f32(opts.v_max),
        loss_penalty_weight=f32(opts.loss_penalty_weight),
        der_low=f32(-opts.der_limit_pu),
        der_high=f32(opts.der_limit_pu),
        bfs_tol=f32(opts.bfs_tol),
        der_bus_idx=jnp.asarray([i for i in range(n) if i != slack], jnp.int32),
        max_steps=opts.max_steps,
        delta_t_hours=opts.delta_t_hours,
        base_mva=base,
        steps_per_day=opts.steps_per_day,
        bfs_max_iter=opts.bfs_max_iter,
        include_der=opts.include_der,
        cost_mode=cost_mode,
        resources=opts.resources,
    )


class DistGridEnv(RadialFeederEnv):
    """Distribution feeder env on a balanced radial power flow.

    the network is a balanced backward/forward sweep ([`powerzoojax.physics.radial_power_flow`][powerzoojax.physics.radial_power_flow]).

    N buses, B = in-service branches (a tree, B = N − 1; case 33bw: 33 and 32). Loads and
    flows are per unit on the case base inside the env; MW only in the reward and the
    thermal check.

    Observation `(3N + 2B + 2,)` float32, unbounded:
      `(v − 1)/0.1` (N) · `p_branch / p_load_ref` (B) · `q_branch / q_load_ref` (B) ·
      `p_load_t / p_load_ref` (N) · `q_load_t / q_load_ref` (N) · `sin φ, cos φ` · the
      bundles' observations (`params.resources`, in order, device-major), with the
      load of the row the next action meets and `p_load_ref = max(Σ case P_d / base, 1e-8)`.
    Action `(N − 1,)` in [-1, 1] (clipped; `(0,)` with `include_der=False`): DER active
      injection at every non-slack bus, in bus order, mapped onto `[der_low, der_high]` p.u.
      (default ∓0.005, i.e. ∓0.5 MW on a 100 MVA base); positive = generation; then each
      bundle's action slice in order. Bundle injections [MW, MVAr] are added at their buses
      before the sweep; bundles read `ctx = {time_step, v_mag}` (pre-step voltages).
    Reward `−loss_penalty_weight · base_mva · Σ p_loss` (network losses in MW, weighted).
    Costs (non-negative, in this order): `voltage_violation` (number of buses outside
      `[v_min, v_max]`), `thermal_overload` (number of branches with
      `base · √(P² + Q²)` above their rating [MVA]), `resource` (0 until resource bundles
      land; with bundles: the sum of their `cost_sum`). A sweep that fails to converge counts every bus as a voltage violation.
    Termination: `done` when `time_step + 1 >= max_steps`; the env auto-resets inside
      `step`. Loads come from row `t mod T` of the `(T, N)` p.u. profiles; reset solves
      the feeder at row 0 with no DER output (the key is unused: reset is deterministic).
    """
    CONSTRAINT_NAMES = DIST_CONSTRAINT_NAMES
    DER_LAYOUT = "n_nodes - 1"

    def physics_invariants(self, params: DistGridParams) -> tuple[Invariant, ...]:
        # The DistFlow branch equation at every converged sweep; each bundle's own laws.
        return distflow_laws(params) + bundle_laws(params.resources)

    def _n_der(self, params: DistGridParams) -> int:
        return params.network.n_nodes - 1 if params.include_der else 0

    def _core_obs_dim(self, params: DistGridParams) -> int:
        return 3 * params.network.n_nodes + 2 * params.network.n_branches + 2

    def _solve(
        self,
        p_net: Float[Array, " n_nodes"],
        q_net: Float[Array, " n_nodes"],
        params: DistGridParams,
        warm_start: Float[Array, " n_branches"] | None = None,
    ) -> RadialFlow:
        return radial_power_flow(
            params.network, p_net, q_net, params.v_slack, params.bfs_max_iter, params.bfs_tol, warm_start
        )

    def _obs(self, state: DistGridState, params: DistGridParams) -> Float[Array, " obs_dim"]:
        p_load, q_load = self._loads(state.time_step, params)
        inv_p = 1.0 / params.p_load_ref
        inv_q = 1.0 / params.q_load_ref
        return jnp.concatenate(
            [
                (state.v_mag - 1.0) * 10.0,
                state.p_branch * inv_p,
                state.q_branch * inv_q,
                p_load * inv_p,
                q_load * inv_q,
                time_features(state.time_step, params.steps_per_day),
                observe_bundles(params.resources, state.resource_states, self._ctx(state)),
            ]
        )

    @staticmethod
    def _ctx(state: DistGridState) -> dict:
        return {"time_step": state.time_step, "v_mag": state.v_mag}

    @staticmethod
    def _soc(resource_states: tuple) -> Float[Array, " n_batt"]:
        # The first bundle that has a state of charge defines the terminal-SOC diagnostic.
        for bstate in resource_states:
            if hasattr(bstate, "soc"):
                return bstate.soc
        return jnp.zeros((0,), jnp.float32)

    def observe(self, state: DistGridState, params: DistGridParams) -> Float[Array, " obs_dim"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: DistGridParams) -> tuple[Float[Array, " obs_dim"], DistGridState]:
        p_load, q_load = self._loads(jnp.asarray(0, jnp.int32), params)
        flow = self._solve(p_load, q_load, params)
        resource_states = reset_bundles(params.resources, key)
        state = DistGridState(
            time_step=jnp.asarray(0, jnp.int32),
            done=jnp.asarray(False),
            v_mag=flow.v_mag,
            p_branch=flow.p_branch,
            q_branch=flow.q_branch,
            p_loss_total=jnp.sum(flow.p_loss),
            is_safe=jnp.asarray(True),
            n_violations=jnp.asarray(0, jnp.int32),
            total_cost=jnp.asarray(0.0, jnp.float32),
            bfs_warm_start=flow.loss_correction,
            resource_states=resource_states,
            episode_batt_soc_init=self._soc(resource_states),
        )
        return self._obs(state, params), state

    def step_env(
        self,
        key: Key,
        state: DistGridState,
        action: Float[Array | np.ndarray, " action_dim"],
        params: DistGridParams,
    ) -> tuple[Float[Array, " obs_dim"], DistGridState, FloatScalar, Float[Array, "3"], Bool[Array, ""], Info]:
        action = jnp.asarray(action, jnp.float32)
        p_load, q_load = self._loads(state.time_step, params)
        der, bundles = self._decode_action(action, state.resource_states, self._ctx(state), params)
        p_net, q_net = p_load, q_load
        if params.include_der:
            # DERs sit at every bus but the slack, in bus order (make_dist_params): a
            # static insertion, not a scatter (a batched scatter is a serial loop on a CPU).
            slack = params.network.slack_bus_idx
            p_net = p_net - jnp.concatenate([der[:slack], jnp.zeros((1,), der.dtype), der[slack:]])
        if params.resources:
            inv_base = 1.0 / params.base_mva
            p_net = p_net - bundles.p_bus_mw * inv_base
            q_net = q_net - bundles.q_bus_mvar * inv_base
        flow = self._solve(p_net, q_net, params, state.bfs_warm_start)

        v = flow.v_mag
        over_v = jnp.maximum(v - params.v_max, 0.0)
        under_v = jnp.maximum(params.v_min - v, 0.0)
        n_voltage = jnp.sum((v > params.v_max) | (v < params.v_min))
        # The voltages of a failed sweep mean nothing: count every bus as violated.
        n_voltage = jnp.where(flow.converged, n_voltage, v.shape[0]).astype(jnp.int32)
        s_mva = params.base_mva * jnp.sqrt(flow.p_branch * flow.p_branch + flow.q_branch * flow.q_branch)
        n_thermal = jnp.sum(s_mva > params.line_cap_mva).astype(jnp.int32)
        mva_excess = jnp.sum(jnp.maximum(s_mva - params.line_cap_mva, 0.0))
        cost_continuous = jnp.sum(over_v + under_v) + mva_excess

        p_loss_total = jnp.sum(flow.p_loss)
        q_loss_total = jnp.sum(flow.q_loss)
        reward = -params.loss_penalty_weight * params.base_mva * p_loss_total
        n_violations = n_voltage + n_thermal
        is_safe = n_violations == 0
        voltage_cost = n_voltage.astype(jnp.float32)
        thermal_cost = n_thermal.astype(jnp.float32)
        resource_cost = bundles.cost_sum
        costs = stack_costs(voltage_cost, thermal_cost, resource_cost)

        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        soc_now = self._soc(bundles.states)
        soc_terminal_sq = jnp.where(done, jnp.sum((soc_now - state.episode_batt_soc_init) ** 2), 0.0)
        next_state = DistGridState(
            time_step=time_step,
            done=done,
            v_mag=v,
            p_branch=flow.p_branch,
            q_branch=flow.q_branch,
            p_loss_total=p_loss_total,
            is_safe=is_safe,
            n_violations=n_violations,
            total_cost=state.total_cost + voltage_cost + thermal_cost,
            bfs_warm_start=flow.loss_correction,
            resource_states=bundles.states,
            episode_batt_soc_init=state.episode_batt_soc_init,
        )
        if params.resources:
            # The bundles' next states computed once (`materialise`): otherwise XLA fuses
            # the bundle step into the observation kernel and recomputes it per output
            # element.
            next_state = eqx.tree_at(
                lambda s: s.resource_states,
                next_state,
                jax.tree.map(lambda x: materialise(x) if x.ndim else x, next_state.resource_states),
            )
        info = {
            "cost_voltage_violation": voltage_cost,
            "cost_thermal_overload": thermal_cost,
            "cost_resource": resource_cost,
            "cost_continuous": cost_continuous,
            "cost_sum": voltage_cost + thermal_cost + resource_cost,
            "is_safe": is_safe,
            "goal_met": is_safe,
            "n_violations": n_violations,
            "v_min_step": jnp.min(v),
            "v_max_step": jnp.max(v),
            "p_loss_MW": params.base_mva * p_loss_total,
            # Feeder-head import [MW]: net load plus losses (what the substation supplies).
            "p_head_MW": params.base_mva * (jnp.sum(p_net) + p_loss_total),
            "q_loss_MVAr": params.base_mva * q_loss_total,
            "bfs_converged": flow.converged,
            "bfs_n_iter": flow.n_iter,
            "bfs_residual": flow.residual,
            "soc_terminal_sq": soc_terminal_sq,
            **{f"resource_{k}": bundles.stats[k] for k in FLEX_STAT_KEYS},
        }
        return self._obs(next_state, params), next_state, reward, costs, done, info
