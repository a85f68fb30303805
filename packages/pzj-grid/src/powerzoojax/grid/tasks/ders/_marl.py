"""The DERs task as multi-agent envs: the pzj-rl adapters over the DERs params, the
scalability variant and the three-phase evaluation feeder. The adapters are reached
at call time, so pzj-grid does not need pzj-rl.
"""

from typing import Any

from powerzoojax.case import CaseData, load_case
from powerzoojax.core._provider import import_provider
from powerzoojax.grid.distribution import (
    DistGrid3PhaseEnv,
    DistGridEnv,
    DistGridParams,
    make_dist_3phase_params_from_case,
)
from powerzoojax.grid.tasks.ders._constants import DERS_3PHASE_BATTERY_BUSES, DERS_LOCAL_K, DERS_V_MAX, DERS_V_MIN
from powerzoojax.grid.tasks.ders._params import make_ders_battery_bundle, make_ders_large_params, make_ders_params


def _marl_env_class(name: str) -> Any:
    # The adapters live one layer up (pzj-rl): reached at call time, never imported here.
    return getattr(import_provider("powerzoojax.rl", name, "pzj-rl"), name)


def make_ders_marl_env(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    voltage_penalty: float = 8.0,
    pv_profiles: Any = None,
    observation_mode: str = "local",
) -> tuple[Any, DistGridParams]:
    """[`make_ders_params`][powerzoojax.grid.tasks.ders.make_ders_params] as a `DistGridMARLEnv`
    (pzj-rl) with 12 device agents.

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `max_steps`: episode length [steps].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.
    - `pv_profiles`: PV capacity factors; `None` takes the bell.
    - `observation_mode`: `"local"` (Dec-POMDP, 15 entries per agent) or `"global"`.

    **Returns:**

    `(env, params)`.
    """
    params = make_ders_params(case, max_steps=max_steps, v_min=v_min, v_max=v_max, pv_profiles=pv_profiles)
    env = _marl_env_class("DistGridMARLEnv")(
        DistGridEnv(), params, voltage_penalty=voltage_penalty, observation_mode=observation_mode
    )
    return env, params


def make_ders_large_marl_env(
    case: CaseData | None = None, *, max_steps: int = 48, voltage_penalty: float = 12.0
) -> tuple[Any, DistGridParams]:
    """[`make_ders_large_params`][powerzoojax.grid.tasks.ders.make_ders_large_params] as a
    local-observation `DistGridMARLEnv` with 20 agents.

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `max_steps`: episode length [steps].
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.

    **Returns:**

    `(env, params)`.
    """
    params = make_ders_large_params(case, max_steps=max_steps)
    env = _marl_env_class("DistGridMARLEnv")(DistGridEnv(), params, voltage_penalty=voltage_penalty, observation_mode="local")
    return env, params


def make_ders_3phase_eval(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    battery_buses: Any = None,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    voltage_penalty: float = 8.0,
    compat_obs_dim: int | None = None,
) -> tuple[Any, Any]:
    """A three-phase evaluation feeder with the DERs batteries, as a `DistGrid3PhaseMARLEnv`
    (pzj-rl) whose local observations are padded so a policy trained on case141 runs on it.

    Line impedances are balanced, `(r + jx)·I₃` from the case's scalar `r, x` (mutual
    coupling is not in `CaseData`); each bus load is split equally over the phases (its
    per-phase values when the case carries them). The in-service lines must form a tree.

    **Arguments:**

    - `case`: the feeder; `None` takes case123.
    - `max_steps`: episode length [steps].
    - `battery_buses`: bus numbers of the batteries; `None` takes
      `DERS_3PHASE_BATTERY_BUSES`.
    - `v_min`, `v_max`: voltage band [p.u.].
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.
    - `compat_obs_dim`: width the local observations are padded to; `None` takes 15 (the
      DERs width).

    **Returns:**

    `(env, params)`.
    """
    case = load_case("123") if case is None else case
    batteries = make_ders_battery_bundle(case, bus_ids=DERS_3PHASE_BATTERY_BUSES if battery_buses is None else battery_buses)
    params = make_dist_3phase_params_from_case(
        case, max_steps=max_steps, v_min=v_min, v_max=v_max, resources=(batteries,), include_der=False,
    )
    width = 1 + DERS_LOCAL_K + 3 + 2 + 5 if compat_obs_dim is None else int(compat_obs_dim)
    env = _marl_env_class("DistGrid3PhaseMARLEnv")(
        DistGrid3PhaseEnv(), params, voltage_penalty=voltage_penalty, min_obs_dim=width
    )
    return env, params
