"""Data-centre env: GPU inference and batch jobs, IT and cooling power, and a one-node zone
thermal model."""

import math
from typing import Any, NamedTuple

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.core import Box, Environment, EnvParams, EnvState, Invariant, make_box, stack_costs, time_features
from powerzoojax.core._types import FloatScalar, Info, IntScalar, Key
from powerzoojax.core._validation import finite_scalar, positive_int
from powerzoojax.grid.microgrid._invariants import datacenter_laws
from powerzoojax.grid.microgrid._rng import step_uniforms
from powerzoojax.grid.microgrid._scheduler import (
    KEY_SPAN,
    MAX_TASK_DURATION,
    MAX_TASK_GPUS,
    N_TASK_SLOTS,
    N_UNIFORMS,
    RUNNING,
    WAITING,
    TaskQueue,
    advance,
    draw_arrivals,
    empty_queue,
    insert_arrivals,
    schedule_with_load,
    slot_sum,
)
from powerzoojax.grid.microgrid._zone_band import T_ZONE_MAX, T_ZONE_MIN
from powerzoojax.physics._pin import materialise

DATACENTER_CONSTRAINT_NAMES = ("sla", "overtemp")


class DataCenterState(EnvState):
    """Data-centre state; powers in MW, temperatures in °C, counters cumulative per episode.

    Task bookkeeping: arrived = waiting + running + finished + sla_violations + dropped.

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `current_p_mw`, `current_q_mvar`: total demand [MW, MVAr].
    - `t_zone`, `t_setpoint`, `t_outdoor`: temperatures [°C].
    - `p_it_mw`, `p_cool_mw`: IT and cooling power [MW].
    - `gpus_infer`, `gpus_active`: GPUs on inference and busy in total.
    - `task_gpus`, `task_deadline`, `task_duration`, `task_remaining`, `task_type`,
      `task_eta`, `task_status`: `(n_slots,)` the task queue (status 0 free, 1 waiting,
      2 running; deadline and durations in steps).
    - `sla_violations`, `n_arrived`, `n_finished`, `n_dropped`: task counters.
    """

    current_p_mw: Float[Array, ""]
    current_q_mvar: Float[Array, ""]
    t_zone: Float[Array, ""]
    t_setpoint: Float[Array, ""]
    t_outdoor: Float[Array, ""]
    p_it_mw: Float[Array, ""]
    p_cool_mw: Float[Array, ""]
    gpus_infer: Int[Array, ""]
    gpus_active: Int[Array, ""]
    task_gpus: Int[Array, " n_slots"]
    task_deadline: Int[Array, " n_slots"]
    task_duration: Int[Array, " n_slots"]
    task_remaining: Int[Array, " n_slots"]
    task_type: Int[Array, " n_slots"]
    task_eta: Float[Array, " n_slots"]
    task_status: Int[Array, " n_slots"]
    # Task bookkeeping: arrived = waiting + running + finished + sla_violations + dropped.
    sla_violations: Int[Array, ""]
    n_arrived: Int[Array, ""]
    n_finished: Int[Array, ""]
    n_dropped: Int[Array, ""]

    @property
    def queue(self) -> TaskQueue:
        """The task slots as one `TaskQueue` (struct of arrays, one entry per slot)."""
        return TaskQueue(
            self.task_gpus, self.task_deadline, self.task_duration, self.task_remaining,
            self.task_type, self.task_eta, self.task_status,
        )


class DataCenterParams(EnvParams):
    """Params of the data-centre model; build with
    [`make_datacenter_params`][powerzoojax.grid.microgrid.make_datacenter_params].

    Per-type arrays are `(2,)`: index 0 training, 1 fine-tuning.

    **Arguments:**

    - `n_gpus`: GPUs in the data centre.
    - `infer_gpu_peak`: GPUs inference takes at its peak.
    - `gpu_idle_w`, `gpu_active_w`: power per GPU [W].
    - `p_base_mw`: base load [MW].
    - `cop_ref`, `cop_decay`, `t_ref`: cooling COP at `t_ref` [°C] and its decay per °C.
    - `c_thermal_kwh_per_c`: zone heat capacity [kWh/°C].
    - `ua_cooling_kw_per_c`: cooling conductance [kW/°C].
    - `h_wall_kw_per_c`: wall conductance to outdoors [kW/°C].
    - `t_set_min`, `t_set_max`: set-point range [°C].
    - `t_initial`: zone temperature at reset [°C].
    - `t_critical`: over-temperature threshold [°C].
    - `p_aux_frac`: auxiliary load [fraction of IT load].
    - `mean_interarrival_steps`: `(2,)` mean steps between task arrivals.
    - `task_gpus_min`, `task_gpus_max`: `(2,)` GPUs per task, inclusive range.
    - `task_duration_min`, `task_duration_max`: `(2,)` task length [steps], inclusive.
    - `deadline_slack`: `(2,)` deadline as a multiple of the duration.
    - `task_eta`: `(2,)` work efficiency.
    - `infer_fraction_profile`: `(T,)` inference share of the peak GPUs, row `t mod T`.
    - `outdoor_temp_profile`: `(T,)` outdoor temperature [°C], row `t mod T`.
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `steps_per_day`: steps in one day (static).
    """

    n_gpus: Int[Array, ""]
    infer_gpu_peak: Int[Array, ""]
    gpu_idle_w: Float[Array, ""]
    gpu_active_w: Float[Array, ""]
    p_base_mw: Float[Array, ""]
    cop_ref: Float[Array, ""]
    cop_decay: Float[Array, ""]
    t_ref: Float[Array, ""]
    c_thermal_kwh_per_c: Float[Array, ""]
    ua_cooling_kw_per_c: Float[Array, ""]
    h_wall_kw_per_c: Float[Array, ""]
    t_set_min: Float[Array, ""]
    t_set_max: Float[Array, ""]
    t_initial: Float[Array, ""]
    t_critical: Float[Array, ""]
    p_aux_frac: Float[Array, ""]
    mean_interarrival_steps: Float[Array, "2"]
    task_gpus_min: Int[Array, "2"]
    task_gpus_max: Int[Array, "2"]
    task_duration_min: Int[Array, "2"]
    task_duration_max: Int[Array, "2"]
    deadline_slack: Float[Array, "2"]
    task_eta: Float[Array, "2"]
    # Row t mod T at step t: inference share of the peak GPUs, outdoor temperature [°C].
    infer_fraction_profile: Float[Array, " n_infer_rows"]
    outdoor_temp_profile: Float[Array, " n_temp_rows"]
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)


def _diurnal(steps_per_day: int) -> tuple[np.ndarray, np.ndarray]:
    """Default (inference fraction, outdoor °C) per step of one day."""
    hour = 24.0 * np.arange(steps_per_day) / steps_per_day
    wave = np.sin(2.0 * math.pi * (hour - 8.0) / 24.0)
    return np.clip(0.5 + 0.5 * wave, 0.1, 1.0), 20.0 + 8.0 * wave


def _profile(caller: str, name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"{caller}: {name} must be real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] < 1:
        raise ValueError(f"{caller}: {name} must be a 1-D array (T,) with T >= 1, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{caller}: {name} must be finite; found {arr[i]} at row {i}")
    return arr.astype(np.float64)


def _pair(caller: str, name: str, value: Any, *, integer: bool, positive: bool) -> np.ndarray:
    arr = np.asarray(value)
    if arr.shape != (2,):
        raise ValueError(f"{caller}: {name} must be a pair (training, fine-tuning), got {value!r}")
    out = np.array([finite_scalar(caller, f"{name}[{i}]", v, positive=positive) for i, v in enumerate(arr)])
    if integer and not np.all(out == np.round(out)):
        raise ValueError(f"{caller}: {name} must be integers, got {value!r}")
    return out


def make_datacenter_params(
    *,
    n_gpus: int = 1000,
    gpu_idle_w: float | int = 55.0,
    gpu_active_w: float | int = 580.0,
    p_base_mw: float | int = 0.5,
    infer_gpu_peak: int = 400,
    cop_ref: float | int = 5.0,
    cop_decay: float | int = 0.04,
    t_ref: float | int = 20.0,
    c_thermal_kwh_per_c: float | int = 500.0,
    ua_cooling_kw_per_c: float | int = 200.0,
    h_wall_kw_per_c: float | int = 5.0,
    t_set_min: float | int = 18.0,
    t_set_max: float | int = 27.0,
    t_initial: float | int = 22.0,
    t_critical: float | int = 35.0,
    p_aux_frac: float | int = 0.05,
    mean_interarrival_steps: Any = (8.0, 4.0),
    task_gpus_range: Any = ((50, 200), (10, 50)),
    task_duration_range: Any = ((10, 50), (5, 20)),
    deadline_slack: Any = (2.0, 3.0),
    task_eta: Any = (0.90, 0.75),
    infer_fraction_profile: Any = None,
    outdoor_temp_profile: Any = None,
    delta_t_hours: float | int = 0.5,
    steps_per_day: int = 48,
    max_steps: int = 48,
) -> DataCenterParams:
    """Validate on the host and build [`DataCenterParams`][powerzoojax.grid.microgrid.DataCenterParams]
    (defaults: the reference's).

    **Arguments:**

    - `n_gpus`, `infer_gpu_peak`: GPU counts.
    - `gpu_idle_w`, `gpu_active_w`: power per GPU [W].
    - `p_base_mw`: base load [MW].
    - `cop_ref`, `cop_decay`, `t_ref`: cooling COP model (`t_ref` in °C).
    - `c_thermal_kwh_per_c`, `ua_cooling_kw_per_c`, `h_wall_kw_per_c`: thermal model
      [kWh/°C, kW/°C].
    - `t_set_min`, `t_set_max`, `t_initial`, `t_critical`: temperatures [°C].
    - `p_aux_frac`: auxiliary load [fraction of IT load].
    - `mean_interarrival_steps`: `(training, fine-tuning)` mean steps between arrivals.
    - `task_gpus_range`, `task_duration_range`: `(training, fine-tuning)` inclusive
      `(min, max)` ranges (durations in steps).
    - `deadline_slack`: `(training, fine-tuning)` deadline as a multiple of the duration.
    - `task_eta`: `(training, fine-tuning)` work efficiency.
    - `infer_fraction_profile`: `(T,)` inference share in [0, 1]; `None` takes the
      reference's diurnal shape over `steps_per_day` rows.
    - `outdoor_temp_profile`: `(T,)` [°C]; `None` takes the reference's diurnal shape.
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`: steps in one day.
    - `max_steps`: episode length [steps].

    **Returns:**

    [`DataCenterParams`][powerzoojax.grid.microgrid.DataCenterParams]. Raises `ValueError`
    naming a bad value, `TypeError` for a non-integer count.
    """
    caller = "make_datacenter_params"
    max_steps = positive_int(caller, "max_steps", max_steps)
    steps_per_day = positive_int(caller, "steps_per_day", steps_per_day)
    n_gpus = positive_int(caller, "n_gpus", n_gpus)
    if isinstance(infer_gpu_peak, bool) or not isinstance(infer_gpu_peak, (int, np.integer)) or infer_gpu_peak < 0:
        raise ValueError(f"{caller}: infer_gpu_peak must be a non-negative integer, got {infer_gpu_peak!r}")
    if infer_gpu_peak > n_gpus:
        raise ValueError(f"{caller}: infer_gpu_peak must be <= n_gpus={n_gpus}, got {infer_gpu_peak}")
    fs = lambda name, v, **kw: finite_scalar(caller, name, v, **kw)  # noqa: E731
    scalars = {
        "gpu_idle_w": fs("gpu_idle_w", gpu_idle_w, non_negative=True),
        "gpu_active_w": fs("gpu_active_w", gpu_active_w, non_negative=True),
        "p_base_mw": fs("p_base_mw", p_base_mw, non_negative=True),
        "cop_ref": fs("cop_ref", cop_ref, positive=True),
        "cop_decay": fs("cop_decay", cop_decay, non_negative=True),
        "t_ref": fs("t_ref", t_ref),
        "c_thermal_kwh_per_c": fs("c_thermal_kwh_per_c", c_thermal_kwh_per_c, positive=True),
        "ua_cooling_kw_per_c": fs("ua_cooling_kw_per_c", ua_cooling_kw_per_c, non_negative=True),
        "h_wall_kw_per_c": fs("h_wall_kw_per_c", h_wall_kw_per_c, non_negative=True),
        "t_set_min": fs("t_set_min", t_set_min),
        "t_set_max": fs("t_set_max", t_set_max),
        "t_initial": fs("t_initial", t_initial),
        "t_critical": fs("t_critical", t_critical),
        "p_aux_frac": fs("p_aux_frac", p_aux_frac, non_negative=True),
    }
    if scalars["t_set_min"] >= scalars["t_set_max"]:
        raise ValueError(f"{caller}: t_set_min must be < t_set_max, got {t_set_min} and {t_set_max}")
    if not T_ZONE_MIN <= scalars["t_initial"] <= T_ZONE_MAX:
        raise ValueError(f"{caller}: t_initial must lie in [{T_ZONE_MIN}, {T_ZONE_MAX}] °C, got {t_initial}")
    if not scalars["t_critical"] < T_ZONE_MAX:
        raise ValueError(f"{caller}: t_critical must be < {T_ZONE_MAX} °C, got {t_critical}")
    if scalars["gpu_active_w"] < scalars["gpu_idle_w"]:
        raise ValueError(f"{caller}: gpu_active_w must be >= gpu_idle_w, got {gpu_active_w} < {gpu_idle_w}")
    interval = _pair(caller, "mean_interarrival_steps", mean_interarrival_steps, integer=False, positive=True)
    ranges = {}
    for name, value in (("task_gpus_range", task_gpus_range), ("task_duration_range", task_duration_range)):
        arr = np.asarray(value)
        if arr.shape != (2, 2):
            raise ValueError(f"{caller}: {name} must be ((train_min, train_max), (ft_min, ft_max)), got {value!r}")
        lo = _pair(caller, f"{name} minima", arr[:, 0], integer=True, positive=True)
        hi = _pair(caller, f"{name} maxima", arr[:, 1], integer=True, positive=True)
        if np.any(lo > hi):
            raise ValueError(f"{caller}: {name} needs min <= max per type, got {value!r}")
        ranges[name] = (lo, hi)
    if np.any(ranges["task_gpus_range"][1] > n_gpus):
        raise ValueError(f"{caller}: task_gpus_range maxima must be <= n_gpus={n_gpus}, got {task_gpus_range!r}")
    if np.any(ranges["task_gpus_range"][1] > MAX_TASK_GPUS):
        raise ValueError(
            f"{caller}: task_gpus_range maxima must be <= {MAX_TASK_GPUS} (the scheduler's exact "
            f"float32 prefix sums over {N_TASK_SLOTS} slots), got {task_gpus_range!r}"
        )
    if np.any(ranges["task_duration_range"][1] > MAX_TASK_DURATION):
        raise ValueError(
            f"{caller}: task_duration_range maxima must be <= {MAX_TASK_DURATION} steps (the "
            f"arrival table's exact float32 store), got {task_duration_range!r}"
        )
    slack = _pair(caller, "deadline_slack", deadline_slack, integer=False, positive=True)
    horizon = float(np.max(ranges["task_duration_range"][1] * slack))
    if horizon >= KEY_SPAN:
        raise ValueError(
            f"{caller}: deadline_slack × task_duration maxima must stay below {KEY_SPAN} steps "
            f"(the scheduler's exact ordering span), got {horizon:g}"
        )
    eta = _pair(caller, "task_eta", task_eta, integer=False, positive=False)
    if np.any((eta < 0) | (eta > 1)):
        raise ValueError(f"{caller}: task_eta must lie in [0, 1], got {task_eta!r}")
    delta_t_hours = fs("delta_t_hours", delta_t_hours, positive=True)
    default_infer, default_temp = _diurnal(steps_per_day)
    infer = default_infer if infer_fraction_profile is None else _profile(caller, "infer_fraction_profile", infer_fraction_profile)
    if np.any((infer < 0) | (infer > 1)):
        raise ValueError(f"{caller}: infer_fraction_profile must lie in [0, 1], got range [{infer.min()}, {infer.max()}]")
    temp = default_temp if outdoor_temp_profile is None else _profile(caller, "outdoor_temp_profile", outdoor_temp_profile)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    i32 = lambda x: jnp.asarray(np.asarray(x, np.int64), jnp.int32)  # noqa: E731
    return DataCenterParams(
        n_gpus=i32(n_gpus),
        infer_gpu_peak=i32(infer_gpu_peak),
        **{k: f32(v) for k, v in scalars.items()},
        mean_interarrival_steps=f32(interval),
        task_gpus_min=i32(ranges["task_gpus_range"][0]),
        task_gpus_max=i32(ranges["task_gpus_range"][1]),
        task_duration_min=i32(ranges["task_duration_range"][0]),
        task_duration_max=i32(ranges["task_duration_range"][1]),
        deadline_slack=f32(slack),
        task_eta=f32(eta),
        infer_fraction_profile=f32(infer),
        outdoor_temp_profile=f32(temp),
        max_steps=max_steps,
        delta_t_hours=delta_t_hours,
        steps_per_day=steps_per_day,
    )


class DataCenterStep(NamedTuple):
    """Diagnostics of one data-centre transition."""

    p_dc_mw: FloatScalar
    p_it_mw: FloatScalar
    p_cool_mw: FloatScalar
    n_expired: IntScalar
    n_dropped: IntScalar
    cost_sla: FloatScalar
    cost_overtemp: FloatScalar


def datacenter_initial_state(params: DataCenterParams) -> DataCenterState:
    """The deterministic episode start: zone and setpoint at `t_initial`, outdoor `t_ref`."""
    q = empty_queue(N_TASK_SLOTS)
    zero_f = jnp.zeros((), jnp.float32)
    zero_i = jnp.zeros((), jnp.int32)
    return DataCenterState(
        time_step=zero_i,
        done=jnp.asarray(False),
        current_p_mw=zero_f,
        current_q_mvar=zero_f,
        t_zone=params.t_initial,
        t_setpoint=params.t_initial,
        t_outdoor=params.t_ref,
        p_it_mw=zero_f,
        p_cool_mw=zero_f,
        gpus_infer=zero_i,
        gpus_active=zero_i,
        task_gpus=q.gpus,
        task_deadline=q.deadline,
        task_duration=q.duration,
        task_remaining=q.remaining,
        task_type=q.task_type,
        task_eta=q.eta,
        task_status=q.status,
        sla_violations=zero_i,
        n_arrived=zero_i,
        n_finished=zero_i,
        n_dropped=zero_i,
    )


def cop_factor(t_outdoor: FloatScalar, params: DataCenterParams) -> FloatScalar:
    """`clip(1 − cop_decay · max(T_out − t_ref, 0), 0.4, 1.2)`: COP relative to `cop_ref`."""
    return jnp.clip(1.0 - params.cop_decay * jnp.maximum(t_outdoor - params.t_ref, 0.0), 0.4, 1.2)


def datacenter_transition(
    key: Key, state: DataCenterState, action: Float[Array, "3"], params: DataCenterParams
) -> tuple[DataCenterState, DataCenterStep]:
    """One step of the data-centre physics, without auto-reset; `time_step` advanced and
    `done = time_step + 1 >= max_steps`. `action = [train, finetune, cooling]` in [0, 1].
    `key` is the env's step key; the draws are `jr.uniform(jr.split(key)[0], (22,))`."""
    action = jnp.clip(action, 0.0, 1.0)
    t = state.time_step
    f_infer = params.infer_fraction_profile[t % params.infer_fraction_profile.shape[0]]
    t_out = params.outdoor_temp_profile[t % params.outdoor_temp_profile.shape[0]]
    n = params.n_gpus
    gpus_infer = jnp.minimum(jnp.floor(params.infer_gpu_peak.astype(jnp.float32) * f_infer).astype(jnp.int32), n)
    t_set = params.t_set_min + action[2] * (params.t_set_max - params.t_set_min)

    u = materialise(step_uniforms(key, N_UNIFORMS))
    arrivals = draw_arrivals(
        u, params.mean_interarrival_steps, params.task_gpus_min, params.task_gpus_max,
        params.task_duration_min, params.task_duration_max,
    )
    queue, n_inserted, n_dropped = insert_arrivals(state.queue, arrivals, t, params.deadline_slack, params.task_eta)
    # Arrivals only fill free slots, so the tasks running before scheduling are the state's.
    running_before = slot_sum(jnp.where(state.task_status == RUNNING, state.task_gpus, 0))
    queue, running_gpus = schedule_with_load(queue, t, n, gpus_infer, action[0], action[1], running_before)

    running = queue.status == RUNNING
    run_gpus = jnp.where(running, queue.gpus, 0)
    task_w = jnp.sum(run_gpus.astype(jnp.float32) * (params.gpu_idle_w + (params.gpu_active_w - params.gpu_idle_w) * queue.eta))
    gpus_active = jnp.minimum(gpus_infer + running_gpus, n)
    infer_w = gpus_infer.astype(jnp.float32) * params.gpu_active_w * 0.5
    idle_w = (n - gpus_active).astype(jnp.float32) * params.gpu_idle_w
    p_it = (infer_w + task_w + idle_w) / 1.0e6 + params.p_base_mw
    cop = params.cop_ref * cop_factor(t_out, params)
    q_cool_kw = params.ua_cooling_kw_per_c * jnp.maximum(state.t_zone - t_set, 0.0)
    p_cool = q_cool_kw / (1000.0 * cop)
    p_dc = p_it * (1.0 + params.p_aux_frac) + p_cool
    heat_kw = 1000.0 * p_it - q_cool_kw + params.h_wall_kw_per_c * (t_out - state.t_zone)
    t_zone = jnp.clip(state.t_zone + params.delta_t_hours * heat_kw / params.c_thermal_kwh_per_c, T_ZONE_MIN, T_ZONE_MAX)

    queue, n_finished, n_expired = advance(queue, t)
    cost_sla = n_expired.astype(jnp.float32) / n.astype(jnp.float32)
    cost_overtemp = jnp.maximum(t_zone - params.t_critical, 0.0) / (T_ZONE_MAX - params.t_critical)
    time_step = t + 1
    new_state = DataCenterState(
        time_step=time_step,
        done=time_step >= params.max_steps,
        current_p_mw=-p_dc,
        current_q_mvar=jnp.zeros((), jnp.float32),
        t_zone=t_zone,
        t_setpoint=t_set,
        t_outdoor=t_out,
        p_it_mw=p_it,
        p_cool_mw=p_cool,
        gpus_infer=gpus_infer,
        gpus_active=gpus_active,
        task_gpus=queue.gpus,
        task_deadline=queue.deadline,
        task_duration=queue.duration,
        task_remaining=queue.remaining,
        task_type=queue.task_type,
        task_eta=queue.eta,
        task_status=queue.status,
        sla_violations=state.sla_violations + n_expired,
        n_arrived=state.n_arrived + arrivals.count[0] + arrivals.count[1],
        n_finished=state.n_finished + n_finished,
        n_dropped=state.n_dropped + n_dropped,
    )
    return new_state, DataCenterStep(p_dc, p_it, p_cool, n_expired, n_dropped, cost_sla, cost_overtemp)


def queue_features(state: DataCenterState, params: DataCenterParams) -> Float[Array, "5"]:
    """`[active/n, infer/n, waiting training GPUs/n, waiting fine-tune GPUs/n, urgency]`."""
    n = params.n_gpus.astype(jnp.float32)
    waiting = state.task_status == WAITING
    gpus = state.task_gpus.astype(jnp.float32)
    wait_train = jnp.sum(jnp.where(waiting & (state.task_type == 0), gpus, 0.0)) / n
    wait_ft = jnp.sum(jnp.where(waiting & (state.task_type == 1), gpus, 0.0)) / n
    slack = (state.task_deadline - state.time_step - state.task_duration).astype(jnp.float32)
    rel = slack / jnp.maximum(state.task_duration, 1).astype(jnp.float32)
    urgency = jnp.clip(jnp.min(jnp.where(waiting, rel, 5.0)) / 5.0, -1.0, 1.0)
    ratios = jnp.stack([state.gpus_active.astype(jnp.float32) / n, state.gpus_infer.astype(jnp.float32) / n, wait_train, wait_ft])
    return jnp.concatenate([jnp.clip(ratios, 0.0, 1.0), urgency[None]])


class DataCenterEnv(Environment):
    """Standalone data-centre env: GPU inference and batch jobs, IT and cooling power, and a
    one-node zone thermal model. Standalone it is a resource env (reward 0); inside
    [`DataCenterMicrogridEnv`][powerzoojax.grid.DataCenterMicrogridEnv] the same transition drives the load.

    Physics per step (`t` = step before the increment, `Δt` [h]):
      inference GPUs `⌊peak · f_t⌋` (`f_t` = `infer_fraction_profile[t mod T]`); batch
      tasks arrive (Poisson, at most 5 per type per step) into a 64-slot buffer and are admitted
      by the earliest-deadline greedy scheduler (`._scheduler`);
      `P_it = (P_infer + P_tasks + P_idle)/1e6 + p_base` [MW] with `P_infer = infer · active_w · 0.5`,
      per running task `gpus (idle_w + (active_w − idle_w) η)`, `P_idle = (n − active) idle_w`;
      `COP = cop_ref · clip(1 − cop_decay · max(T_out − t_ref, 0), 0.4, 1.2)`;
      `Q_cool = ua · max(T_zone − T_set, 0)` [kW], `P_cool = Q_cool / (1000 COP)` [MW];
      `P_dc = P_it (1 + p_aux) + P_cool`;
      `T_zone' = clip(T_zone + Δt (1000 P_it − Q_cool + h_wall (T_out − T_zone)) / c_thermal, 15, 45)`.
    Tasks that ran this step draw power for it (they are counted before their countdown ends).

    Observation `(11,)` float32: `[active/n, infer/n, waiting training GPUs/n, waiting
      fine-tuning GPUs/n, urgency, P_cool/(P_it + P_cool), (T_zone − 15)/30, (T_out − 10)/20,
      (T_set − t_set_min)/(t_set_max − t_set_min), sin φ, cos φ]`, the non-signed entries clipped to
      [0, 1]; `urgency = clip(min over waiting tasks of ((deadline − t − duration)/max(duration, 1))/5,
      −1, 1)`, 1 with none waiting.
    Action `(3,)` in [0, 1] (clipped): `[train fraction, fine-tune fraction, cooling]`;
      `T_set = t_set_min + cooling · (t_set_max − t_set_min)` (a low value cools harder).
    Reward 0 (standalone resource env). Costs `("sla", "overtemp")`: expired tasks / n_gpus and
      `max(T_zone' − t_critical, 0)/(45 − t_critical)`.
    Termination at `max_steps`; auto-reset (reset is deterministic: zone and setpoint at
      `t_initial`, outdoor `t_ref`, empty queue).

    The random draws of a step are `jr.uniform(jr.split(key)[0], (22,))` of the env's step key,
    not the reference's seven key splits: same distributions, different streams. They are
    computed by the unrolled hash of `._rng` (bit for bit the same numbers; the
    `jax.random` path is a rolled loop per hash on CPU).
    """
    def observation_space(self, params: DataCenterParams) -> Box:
        low = np.zeros(11, np.float32)
        low[[4, 9, 10]] = -1.0
        return make_box(low, np.ones(11, np.float32))

    def action_space(self, params: DataCenterParams) -> Box:
        return make_box(0.0, 1.0, (3,))

    def constraint_names(self, params: DataCenterParams) -> tuple[str, ...]:
        return DATACENTER_CONSTRAINT_NAMES

    def physics_invariants(self, params: DataCenterParams) -> tuple[Invariant, ...]:
        # Zone band and heat balance, the chiller's COP, the site's power, no task lost.
        return datacenter_laws()

    def default_params(self) -> DataCenterParams:
        return make_datacenter_params()

    def _obs(self, state: DataCenterState, params: DataCenterParams) -> Float[Array, "11"]:
        p_total = state.p_it_mw + state.p_cool_mw
        thermal = jnp.stack([
            jnp.where(p_total > 0, state.p_cool_mw / jnp.maximum(p_total, 1e-9), 0.0),
            (state.t_zone - T_ZONE_MIN) / 30.0,
            (state.t_outdoor - 10.0) / 20.0,
            (state.t_setpoint - params.t_set_min) / (params.t_set_max - params.t_set_min),
        ])
        return jnp.concatenate([
            queue_features(state, params),
            jnp.clip(thermal, 0.0, 1.0),
            time_features(state.time_step, params.steps_per_day),
        ])

    def action_layout(self, params: DataCenterParams) -> str:
        return "[train, finetune, cooling]"

    def observe(self, state: DataCenterState, params: DataCenterParams) -> Float[Array, "11"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: DataCenterParams) -> tuple[Float[Array, "11"], DataCenterState]:
        state = datacenter_initial_state(params)
        return self._obs(state, params), state

    def step_env(
        self, key: Key, state: DataCenterState, action: Float[Array | np.ndarray, " action_dim"], params: DataCenterParams
    ) -> tuple[Float[Array, "11"], DataCenterState, FloatScalar, Float[Array, "2"], Bool[Array, ""], Info]:
        next_state, out = datacenter_transition(key, state, jnp.asarray(action, jnp.float32), params)
        done = next_state.done
        costs = stack_costs(out.cost_sla, out.cost_overtemp)
        info = {
            "cost_sla": out.cost_sla,
            "cost_overtemp": out.cost_overtemp,
            "cost_sum": out.cost_sla + out.cost_overtemp,
            "n_expired": out.n_expired,
            "n_dropped": out.n_dropped,
            "p_dc_mw": out.p_dc_mw,
            "p_it_mw": out.p_it_mw,
            "p_cool_mw": out.p_cool_mw,
            "t_zone": next_state.t_zone,
        }
        return self._obs(next_state, params), next_state, jnp.zeros((), jnp.float32), costs, done, info
