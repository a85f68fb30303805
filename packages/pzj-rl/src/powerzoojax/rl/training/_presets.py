"""Named, ready-to-train setups: `list_presets()`, `get_preset(name)`, `train(name)`.

All sixteen names of the reference exist and build their env (`preset.env_factory()`),
beside two analytic-policy-gradient presets on the same envs (`*-apg`).
The IPPO presets add `normalize_rewards=True` (profits are in $, thousands per step) to
the reference configs. Data: `dso-nflex*` use the DSO task's synthetic feeder shapes,
`dc-microgrid*` the env's synthetic default profiles, `ders-medium*` and `tso-*` the
shipped SimBench profiles of their tasks, `gencos-case5-ippo` the GenCos task's GB
training profiles (`gencos-case5-ippo-dev`: a flat mid-load day, no data).
`case5-ippo-battery`: `GridMARLEnv` with 5 unit agents and 2 battery agents
(`battery_0` at bus 1, `battery_1` at bus 3; 20 MW / 50 MWh each).
`ders-medium`: `make_ders_marl_env(voltage_penalty=8.0)` (12 typed agents, local obs 15).

`case5-economic-dispatch`: `LogWrapper(TransGridEnv)` on case 5 with the nominal
load `0.5 · d_max` (750 MW in all), 48 half-hour steps; reward `−0.01 · generation
cost`. Cheapest dispatch pushes the 600 MW / 10 $/MWh unit at bus 5, which overloads
the 240 MW line 4–5 by about 19 MW (random actions almost never overload a line).

`case5-economic-dispatch-apg`, `dso-nflex-apg`: the envs of `case5-economic-dispatch` and
`dso-nflex` trained by [`make_apg_train`][powerzoojax.rl.algos.make_apg_train]
(backpropagation through 8-step windows of the differentiable env, gradients clipped
at global norm 1). APG needs far fewer env steps than PPO on these dispatch problems,
whose reward is a smooth function of the action through the physics.

`case5-safe-dispatch`: the same env under `SafeRLWrapper` with the
`thermal_overload` channel (MW above line limits, summed over lines, per step) and a
per-episode threshold of 0 MW: no overload is allowed, so the policy must keep the
bus-5 unit below the line limit at a slightly higher generation cost (≈ 90 vs 82
reward units per step at the optimum).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

from powerzoojax.rl.algos._config import TrainConfig


class PresetDef(NamedTuple):
    """A preset: description, env factory, optional reward function, config.

    **Arguments:**

    - `description`: one line.
    - `env_factory`: `() -> env` (a bound wrapper or multi-agent adapter).
    - `reward_fn`: reward function of a `RewardWrapper`, or `None`.
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    """

    description: str
    env_factory: Callable[[], Any]
    reward_fn: Callable | None
    config: TrainConfig


def _case5_env(safe: bool) -> Any:
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.rl.wrappers._log import LogWrapper
    from powerzoojax.rl.wrappers._safe import SafeRLWrapper

    params = make_trans_params(load_case("5"), max_steps=48)
    if safe:
        return SafeRLWrapper(TransGridEnv(), params, selected_names=("thermal_overload",), cost_thresholds=(0.0,))
    return LogWrapper(TransGridEnv(), params)


def _case5_marl_env() -> Any:
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.rl.marl._grid import GridMARLEnv

    return GridMARLEnv(TransGridEnv(), make_trans_params(load_case("5"), max_steps=48))


def _gencos_env(dev: bool) -> Any:
    import numpy as np
    from powerzoojax.case import load_case
    from powerzoojax.market import make_market_marl_params
    from powerzoojax.rl.marl._market import MarketMARLEnv

    case = load_case("5")
    if dev:
        # Flat mid-load day: every load at the middle of its [d_min, d_max] band (750 MW on case 5).
        mid = 0.5 * (np.asarray(case.load_d_min, np.float64) + np.asarray(case.load_d_max, np.float64))
        profiles = np.tile(mid, (48, 1))
    else:
        try:
            from powerzoojax.market.tasks.gencos import load_gencos_profiles
        except ImportError:
            raise NotImplementedError(
                "gencos-case5-ippo needs the GB training profiles (load_gencos_profiles of the GenCos task, "
                "powerzoojax.market.tasks.gencos): install the pzj-market distribution, or use gencos-case5-ippo-dev (flat mid-load profile)"
            ) from None
        profiles = load_gencos_profiles(case, "train")
    return MarketMARLEnv(make_market_marl_params(case, profiles, n_segments=3, max_markup=2.0))


def _case5_battery_marl_env() -> Any:
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.grid.resources import make_battery_bundle
    from powerzoojax.rl.marl._grid import GridMARLEnv

    case = load_case("5")
    batteries = make_battery_bundle(case, (1, 3), power_mw=20.0, energy_mwh=50.0)
    return GridMARLEnv(TransGridEnv(), make_trans_params(case, max_steps=48, resources=(batteries,)))


def _battery_env() -> Any:
    from powerzoojax.grid import BatteryEnv
    from powerzoojax.grid.resources import make_battery_params
    from powerzoojax.rl.wrappers._log import LogWrapper

    return LogWrapper(BatteryEnv(), make_battery_params(max_steps=48))


def _dso_env(safe: bool) -> Any:
    from powerzoojax.grid import DistGridEnv
    from powerzoojax.grid.tasks.dso import DSOTask
    from powerzoojax.rl.wrappers._log import LogWrapper
    from powerzoojax.rl.wrappers._safe import SafeRLWrapper

    task = DSOTask(synthetic=True)
    params = task.make_params("train")
    if safe:
        spec = task.constraint_spec()
        return SafeRLWrapper(DistGridEnv(), params, selected_names=spec.selected_names, cost_thresholds=spec.thresholds)
    return LogWrapper(DistGridEnv(), params)


def _ders_env() -> Any:
    from powerzoojax.rl.marl._dist_grid import make_ders_marl_env

    return make_ders_marl_env(voltage_penalty=8.0)


def _tso_env(kind: str) -> Any:
    from powerzoojax.grid import UnitCommitmentEnv
    from powerzoojax.grid.tasks import tso
    from powerzoojax.rl.wrappers._log import LogWrapper
    from powerzoojax.rl.wrappers._safe import SafeRLWrapper

    if kind == "scuc":  # the TSO task's constraint spec (thermal and reserve, threshold 0)
        return SafeRLWrapper(
            UnitCommitmentEnv(), tso.make_tso_scuc_params(), selected_names=("thermal_overload", "reserve_shortfall"),
            cost_thresholds=(0.0, 0.0),
        )
    factory = tso.make_tso_ed_params if kind == "ed" else tso.make_tso_uc_params
    return LogWrapper(UnitCommitmentEnv(), factory())


def _dcmg_env(safe: bool) -> Any:
    from powerzoojax.grid import DataCenterMicrogridEnv, make_dcmicrogrid_params
    from powerzoojax.rl.wrappers._log import LogWrapper
    from powerzoojax.rl.wrappers._safe import SafeRLWrapper

    params = make_dcmicrogrid_params(max_steps=288)  # synthetic workload / PV / price profiles
    if safe:
        return SafeRLWrapper(
            DataCenterMicrogridEnv(), params, selected_names=("sla", "overtemp", "power_deficit"),
            cost_thresholds=(0.0, 0.0, 0.0),
        )
    return LogWrapper(DataCenterMicrogridEnv(), params)


_CASE5 = TrainConfig(
    algo="ppo",
    total_timesteps=200_000,
    num_envs=32,
    n_steps=48,
    n_minibatches=4,
    learning_rate=1e-3,
    ent_coef=0.0,
    normalize_rewards=True,
    eval_freq=10_000,
    eval_num_episodes=32,
)
_LARGE: dict[str, Any] = dict(hidden_dims=(128, 128), gamma=0.995, normalize_observations=True)
# APG: one clipped Adam step per backpropagated 8-step window of every env.
_APG = TrainConfig(
    algo="apg",
    total_timesteps=20_480,
    num_envs=16,
    n_steps=8,
    learning_rate=3e-3,
    max_grad_norm=1.0,
    eval_freq=2_048,
    eval_num_episodes=16,
)

PRESETS: dict[str, PresetDef] = {
    "battery-soc-tracking": PresetDef(
        "Single battery tracking a state-of-charge target (BatteryEnv, 48 steps)",
        _battery_env, None, TrainConfig(total_timesteps=100_000, num_envs=64, n_steps=48),
    ),
    "case5-economic-dispatch": PresetDef(
        "Case-5 DC economic dispatch: minimise generation cost (TransGridEnv, LogWrapper)",
        lambda: _case5_env(False), None, _CASE5,
    ),
    "case5-economic-dispatch-apg": PresetDef(
        "Case-5 DC economic dispatch by analytic policy gradient through the env (TransGridEnv, LogWrapper)",
        lambda: _case5_env(False), None, _APG,
    ),
    "case5-safe-dispatch": PresetDef(
        "Case-5 DC dispatch with no line overload allowed (SafeRLWrapper thermal_overload, threshold 0)",
        lambda: _case5_env(True), None,
        _CASE5.replace(
            algo="ppo_lagrangian", learning_rate=2e-3, cost_thresholds=(0.0,), lambda_lr=0.5, cost_scale=1000.0
        ),
    ),
    "case5-ippo": PresetDef(
        "Case-5 dispatch as 5 unit agents (GridMARLEnv)",
        _case5_marl_env, None,
        TrainConfig(algo="ippo", total_timesteps=200_000, num_envs=16, n_steps=48, n_minibatches=4,
                    learning_rate=1e-3, ent_coef=0.0, normalize_rewards=True, eval_num_episodes=32),
    ),
    "case5-ippo-battery": PresetDef(
        "Case-5 dispatch, 5 units + batteries at buses 1 and 3 (7 agents, GridMARLEnv)",
        _case5_battery_marl_env, None,
        TrainConfig(algo="ippo", total_timesteps=200_000, num_envs=16, n_steps=48),
    ),
    "dso-nflex": PresetDef(
        "DSO loss minimisation with 6 flexible loads on case33bw (DistGridEnv)",
        lambda: _dso_env(False), None,
        TrainConfig(total_timesteps=3_000_000, num_envs=128, n_steps=48, **_LARGE),
    ),
    "dso-nflex-apg": PresetDef(
        "DSO loss minimisation on case33bw by analytic policy gradient through the feeder (DistGridEnv)",
        lambda: _dso_env(False), None,
        _APG.replace(total_timesteps=40_960, num_envs=32, hidden_dims=(128, 128), gamma=0.995,
                     normalize_observations=True, eval_freq=4_096),
    ),
    "dso-nflex-safe": PresetDef(
        "DSO with a voltage-violation constraint (SafeRLWrapper, threshold 0)",
        lambda: _dso_env(True), None,
        TrainConfig(algo="ppo_lagrangian", total_timesteps=3_000_000, num_envs=128, n_steps=48,
                    cost_thresholds=(0.0,), **_LARGE),
    ),
    "ders-medium": PresetDef(
        "12 DER agents on case141, local observations (DistGridMARLEnv)",
        _ders_env, None,
        TrainConfig(algo="ippo_typed", total_timesteps=15_000_000, num_envs=64, n_steps=48, **_LARGE),
    ),
    "ders-medium-safe": PresetDef(
        "DERs with voltage shaping; thresholds (0, 0, 0) logged only",
        _ders_env, None,
        TrainConfig(algo="ippo_typed", total_timesteps=15_000_000, num_envs=64, n_steps=48,
                    cost_thresholds=(0.0, 0.0, 0.0), **_LARGE),
    ),
    "tso-ed": PresetDef(
        "TSO economic dispatch on case118, commitment off (UnitCommitmentEnv)",
        lambda: _tso_env("ed"), None,
        TrainConfig(total_timesteps=5_000_000, num_envs=64, n_steps=48, hidden_dims=(256, 256), gamma=0.995,
                    normalize_observations=True),
    ),
    "tso-uc": PresetDef(
        "TSO security-constrained unit commitment on case118 (UnitCommitmentEnv)",
        lambda: _tso_env("uc"), None,
        TrainConfig(total_timesteps=10_000_000, num_envs=64, n_steps=48, hidden_dims=(256, 256), gamma=0.995,
                    normalize_observations=True),
    ),
    "tso-scuc-safe": PresetDef(
        "TSO SCUC with thermal and reserve constraints (SafeRLWrapper, thresholds 0)",
        lambda: _tso_env("scuc"), None,
        TrainConfig(algo="ppo_lagrangian", total_timesteps=10_000_000, num_envs=64, n_steps=48,
                    hidden_dims=(256, 256), gamma=0.995, cost_thresholds=(0.0, 0.0), normalize_observations=True),
    ),
    "gencos-case5-ippo": PresetDef(
        "5 generating companies bidding in a case-5 market with GB load profiles (MarketMARLEnv)",
        lambda: _gencos_env(False), None,
        TrainConfig(algo="ippo", total_timesteps=5_000_000, num_envs=256, n_steps=48, hidden_dims=(128, 128),
                    gamma=0.995, eval_freq=100_000, normalize_rewards=True),
    ),
    "gencos-case5-ippo-dev": PresetDef(
        "GenCos market on a flat mid-load profile (MarketMARLEnv, no data needed)",
        lambda: _gencos_env(True), None,
        TrainConfig(algo="ippo", total_timesteps=5_000_000, num_envs=256, n_steps=48, hidden_dims=(128, 128),
                    gamma=0.995, eval_freq=100_000, normalize_rewards=True),
    ),
    "dc-microgrid": PresetDef(
        "Data-centre microgrid, 288 five-minute steps (DataCenterMicrogridEnv)",
        lambda: _dcmg_env(False), None,
        TrainConfig(total_timesteps=5_000_000, num_envs=128, n_steps=288, hidden_dims=(256, 256), gamma=0.999,
                    normalize_observations=True),
    ),
    "dc-microgrid-safe": PresetDef(
        "Data-centre microgrid with SLA, over-temperature and power-deficit constraints",
        lambda: _dcmg_env(True), None,
        TrainConfig(algo="ppo_lagrangian", total_timesteps=5_000_000, num_envs=128, n_steps=288,
                    hidden_dims=(256, 256), gamma=0.999, cost_thresholds=(0.0, 0.0, 0.0), normalize_observations=True),
    ),
}


def list_presets() -> list[dict[str, Any]]:
    """`[{name, description, algo, total_timesteps}]` for every preset, in a fixed order.

    **Returns:**

    A list of dicts, one per preset.
    """
    return [
        {"name": name, "description": p.description, "algo": p.config.algo, "total_timesteps": p.config.total_timesteps}
        for name, p in PRESETS.items()
    ]


def get_preset(name: str) -> PresetDef:
    """The preset `name`.

    **Arguments:**

    - `name`: preset name.

    **Returns:**

    The [`PresetDef`][powerzoojax.rl.training.PresetDef]; `KeyError` listing the valid
    names otherwise.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; presets are {list(PRESETS)}") from None
