"""Presets, train(), the command line."""

import json
import os
import subprocess
import sys

import pytest

SPEC_PRESETS = [
    "battery-soc-tracking", "case5-economic-dispatch", "case5-safe-dispatch", "case5-ippo", "case5-ippo-battery",
    "dso-nflex", "dso-nflex-safe", "ders-medium", "ders-medium-safe", "tso-ed", "tso-uc", "tso-scuc-safe",
    "gencos-case5-ippo", "gencos-case5-ippo-dev", "dc-microgrid", "dc-microgrid-safe",
]
APG_PRESETS = ["case5-economic-dispatch-apg", "dso-nflex-apg"]
REFERENCE_VARIANTS = ["case5-economic-dispatch-reference", "case5-safe-dispatch-reference"]


def test_all_sixteen_presets_are_listed():
    from powerzoojax.rl import list_presets

    rows = list_presets()
    assert sorted(r["name"] for r in rows) == sorted(SPEC_PRESETS + APG_PRESETS + REFERENCE_VARIANTS)
    assert all(set(r) == {"name", "description", "algo", "total_timesteps"} for r in rows)
    # Every description says which cost channels the preset constrains.
    assert all("constrains" in r["description"] for r in rows), [r["name"] for r in rows if "constrains" not in r["description"]]


def test_unknown_preset_lists_the_names():
    from powerzoojax.rl import get_preset

    with pytest.raises(KeyError, match="case5-economic-dispatch"):
        get_preset("case6")


@pytest.mark.requires("powerzoojax.grid")
def test_every_grid_preset_builds_its_spec_env():
    """Spec §3.6 table: env type, agents, observation and action sizes (§4.2 for the tasks)."""
    from powerzoojax.rl import DistGridMARLEnv, GridMARLEnv, LogWrapper, SafeRLWrapper, get_preset

    env = get_preset("case5-ippo-battery").env_factory()
    assert isinstance(env, GridMARLEnv) and env.agents == (*(f"unit_{i}" for i in range(5)), "battery_0", "battery_1")
    dso = get_preset("dso-nflex").env_factory()
    assert isinstance(dso, LogWrapper) and dso.obs_size == 195 and dso.action_size == 12
    dso_safe = get_preset("dso-nflex-safe").env_factory()
    assert isinstance(dso_safe, SafeRLWrapper) and dso_safe.selected_constraint_names == ("voltage_violation",)
    ders = get_preset("ders-medium").env_factory()
    assert isinstance(ders, DistGridMARLEnv) and ders.num_agents == 12 and ders.obs_dim == 15
    assert ders.voltage_penalty == 8.0 and get_preset("ders-medium").config.algo == "ippo_typed"
    dcmg = get_preset("dc-microgrid-safe").env_factory()
    assert isinstance(dcmg, SafeRLWrapper) and dcmg.obs_size == 24 and dcmg.action_size == 5
    assert dcmg.selected_constraint_names == ("sla", "overtemp", "power_deficit") and dcmg.max_steps == 288
    battery = get_preset("battery-soc-tracking").env_factory()
    assert isinstance(battery, LogWrapper) and battery.max_steps == 48


@pytest.mark.slow
@pytest.mark.requires("powerzoojax.grid")
def test_tso_presets_build():
    from powerzoojax.rl import LogWrapper, SafeRLWrapper, get_preset

    ed = get_preset("tso-ed").env_factory()
    # Box(108) = [commit intent | dispatch preference] for the 54 units; obs 410 (4-step load preview)
    assert isinstance(ed, LogWrapper) and ed.action_size == 108
    scuc = get_preset("tso-scuc-safe").env_factory()
    assert isinstance(scuc, SafeRLWrapper) and scuc.selected_constraint_names == ("thermal_overload", "reserve_shortfall")


@pytest.mark.requires("powerzoojax.grid")
def test_case5_presets_build():
    from powerzoojax.rl import LogWrapper, SafeRLWrapper, get_preset

    ed = get_preset("case5-economic-dispatch")
    ed_env = ed.env_factory()
    assert isinstance(ed_env, LogWrapper) and ed.config.algo == "ppo"
    assert float(ed_env.params.unit_limit_price) == 300.0  # the power balance is priced in the reward
    reference = get_preset("case5-economic-dispatch-reference")
    ref_env = reference.env_factory()
    # The reference's reward-only configuration: same config, the reference's cost model.
    assert isinstance(ref_env, LogWrapper) and ref_env.params.unit_limit_price is None and reference.config == ed.config
    safe = get_preset("case5-safe-dispatch")
    env = safe.env_factory()
    assert isinstance(env, SafeRLWrapper) and safe.config.algo == "ppo_lagrangian"
    assert env.selected_constraint_names == ("thermal_overload", "power_balance") and env.cost_thresholds == (0.0, 0.0)
    assert env.params.unit_limit_price is None and safe.config.cost_thresholds == (0.0, 0.0)
    safe_ref = get_preset("case5-safe-dispatch-reference")
    env = safe_ref.env_factory()
    assert env.selected_constraint_names == ("thermal_overload",) and env.cost_thresholds == (0.0,)
    apg = get_preset("case5-economic-dispatch-apg")
    assert isinstance(apg.env_factory(), LogWrapper) and apg.config.algo == "apg"


def test_cli_list_presets(capsys):
    from powerzoojax.rl.training._cli import main

    assert main(["--list-presets"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SPEC_PRESETS)


def test_cli_without_preset_prints_help_and_fails(capsys):
    from powerzoojax.rl.training._cli import main

    assert main([]) == 1
    assert "--preset" in capsys.readouterr().err


def test_cli_unknown_and_unavailable_presets(capsys):
    from powerzoojax.rl.training._cli import main

    assert main(["--preset", "nope"]) == 2
    from powerzoojax.rl.training import _presets

    def unavailable():
        raise NotImplementedError("this preset needs SomeEnv (project issue 99)")

    preset = _presets.PRESETS["tso-uc"]
    _presets.PRESETS["tso-uc"] = preset._replace(env_factory=unavailable)
    try:
        assert main(["--preset", "tso-uc"]) == 3
    finally:
        _presets.PRESETS["tso-uc"] = preset
    assert "SomeEnv" in capsys.readouterr().err


def test_cli_override_parsing():
    from powerzoojax.rl.training._cli import _overrides

    got = _overrides(["--num_envs", "8", "--learning-rate", "1e-3", "--algo", "saute_ppo", "--hidden_dims=16,16", "--seed", "3"])
    assert got == {"num_envs": 8, "learning_rate": 1e-3, "algo": "saute_ppo", "hidden_dims": [16, 16]}


@pytest.mark.requires("powerzoojax.grid")
def test_cli_trains_a_tiny_preset_run(tmp_path, capsys):
    from powerzoojax.rl.training._cli import main

    out_dir = tmp_path / "run"
    rc = main([
        "--preset", "case5-economic-dispatch", "--seed", "1", "--output", str(out_dir), "--no-progress",
        "--total_timesteps", "512", "--num_envs", "8", "--n_steps", "16", "--hidden_dims", "16,16",
        "--n_epochs", "1", "--n_minibatches", "2", "--eval_freq", "0",
    ])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["env"] == "case5-economic-dispatch" and summary["seed"] == 1 and summary["env_steps"] == 512
    for f in ("result.json", "metrics.csv", "metrics.jsonl", "learning_curve.png", "config.yaml"):
        assert (out_dir / f).exists(), f
    saved = json.loads((out_dir / "result.json").read_text())
    assert saved["config"]["num_envs"] == 8 and saved["summary"]["env"] == "case5-economic-dispatch"


def test_python_dash_m_powerzoojax_lists_presets():
    # The namespace package has no __init__.py, only pzj-core's __main__.py (which runs pzj-rl's CLI).
    out = subprocess.run(
        [sys.executable, "-m", "powerzoojax", "--list-presets"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert out.returncode == 0, out.stderr
    assert "case5-safe-dispatch" in out.stdout
