"""benchmarks/task_scores.py: the statistics it assembles from per-episode results (pure
host functions, checked on tiny hand-made inputs against NumPy / SciPy)."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "task_scores.py"


@pytest.fixture(scope="module")
def ts():
    spec = importlib.util.spec_from_file_location("task_scores", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.BOOTSTRAP_RESAMPLES = 500  # the statistics, not the resolution of the CI, are checked here
    return module


def _results(seeds=5, episodes=3, channels=2, offset=0.0):
    rng = np.random.default_rng(0)
    ret = rng.normal(10.0 + offset, 1.0, (seeds, episodes))
    costs = np.zeros((seeds, episodes, channels))
    costs[:, :, 1] = rng.uniform(0.0, 2.0, (seeds, episodes))
    return {"return": ret, "costs": costs, "violation_steps": (costs > 0).astype(float) * 3}


def _baseline(ret, costs):
    return {"return": np.full((1, 3), ret), "costs": np.tile(np.asarray(costs, float), (1, 3, 1))}


def test_iqm_ci_and_norm_score_of_a_split(ts):
    from scipy import stats

    agent = _results()
    base = {"weak": _baseline(5.0, [0.0, 1.0]), "strong": _baseline(15.0, [0.0, 3.0])}
    out = ts.summarize_split(agent, base, ["a", "b"], "weak", "strong")
    per_seed = agent["return"].mean(axis=1)
    assert out["return"]["iqm"] == pytest.approx(stats.trim_mean(per_seed, 0.25))
    lo, hi = out["return"]["ci95"]
    assert per_seed.min() - 1e-9 <= lo <= out["return"]["iqm"] <= hi <= per_seed.max() + 1e-9
    assert out["norm_score"] == pytest.approx((out["return"]["iqm"] - 5.0) / 10.0) and out["norm_score_status"] == "ok"
    assert out["costs"]["a"]["iqm"] == 0.0
    assert out["costs"]["b"]["iqm"] == pytest.approx(stats.trim_mean(agent["costs"][:, :, 1].mean(axis=1), 0.25))
    assert out["baselines"]["strong"]["costs"]["b"] == 3.0
    assert out["n_seeds"] == 5 and out["n_episodes"] == 3
    assert "constraints" not in out
    # The agent pays at most 2 in channel b, the strong baseline 3: no gain bought by violations.
    assert out["costlier_channels"] == [] and out["gain_with_violations"] is False


def test_a_gain_paid_for_in_a_cost_channel_is_flagged(ts):
    agent = _results(offset=10.0)  # return above both baselines
    agent["costs"][:, :, 0] = 4.0  # channel a: every baseline pays 0
    base = {"weak": _baseline(5.0, [0.0, 1.0]), "strong": _baseline(15.0, [0.0, 3.0])}
    out = ts.summarize_split(agent, base, ["a", "b"], "weak", "strong")
    assert out["norm_score"] > 1.0
    assert out["costlier_channels"] == ["a"] and out["gain_with_violations"] is True


def test_a_cost_equal_to_the_baselines_but_for_round_off_is_not_flagged(ts):
    # A split's unavoidable overloads cost every policy the same, up to float32 round-off
    # of the episode sums (a relative 1e-6 here); a real excess of 1 % is still flagged.
    agent = _results(offset=10.0)
    base = {"weak": _baseline(5.0, [20.200726, 1.0]), "strong": _baseline(15.0, [20.200726, 3.0])}
    agent["costs"][:, :, 0] = 20.200747
    out = ts.summarize_split(agent, base, ["a", "b"], "weak", "strong")
    assert out["costlier_channels"] == [] and out["gain_with_violations"] is False
    agent["costs"][:, :, 0] = 20.200726 * 1.01
    out = ts.summarize_split(agent, base, ["a", "b"], "weak", "strong")
    assert out["costlier_channels"] == ["a"] and out["gain_with_violations"] is True


def test_constraint_satisfaction_against_thresholds(ts):
    agent = _results()
    agent["costs"][:, :, 0] = 0.0
    agent["costs"][0, 0, 0] = 1.0  # one episode of 15 violates channel a
    base = {"weak": _baseline(5.0, [0.0, 1.0]), "strong": _baseline(15.0, [0.0, 3.0])}
    out = ts.summarize_split(agent, base, ["a", "b"], "weak", "strong", thresholds={"a": 0.0, "b": 0.5})
    a, b = out["constraints"]["a"], out["constraints"]["b"]
    assert a["threshold"] == 0.0 and a["episodes_within"] == pytest.approx(14 / 15)
    assert a["satisfied"]  # the seed with the violation is trimmed by the IQM
    assert b["episodes_within"] == pytest.approx(np.mean(agent["costs"][:, :, 1] <= 0.5 + 1e-6))
    assert not b["satisfied"]


def test_tied_or_inverted_baselines_give_no_norm_score(ts):
    agent = _results()
    base = {"weak": _baseline(5.0, [0.0, 0.0]), "strong": _baseline(5.0, [0.0, 0.0])}
    out = ts.summarize_split(agent, base, ["a", "b"], "weak", "strong")
    assert math.isnan(out["norm_score"]) and out["norm_score_status"] == "tied_anchors"
    base = {"weak": _baseline(15.0, [0.0, 0.0]), "strong": _baseline(5.0, [0.0, 0.0])}
    out = ts.summarize_split(agent, base, ["a", "b"], "weak", "strong")
    assert math.isnan(out["norm_score"]) and out["norm_score_status"] == "inverted_anchors"
    assert out["gain_with_violations"] is False
    assert ts.seed_stats([math.nan, math.nan])["n"] == 0


def test_scaled_config_keeps_the_batch_and_scales_the_budget(ts):
    from powerzoojax.rl import TrainConfig

    cfg = TrainConfig(total_timesteps=3_000_000, num_envs=128, n_steps=48, n_minibatches=32, eval_freq=10_000)
    small = ts.scaled_config(cfg, 0.01, False, None)
    assert small.num_envs == 128 and small.n_steps == 48 and small.eval_freq == 0
    assert small.n_updates == round(30_000 / (128 * 48))
    quick = ts.scaled_config(cfg, 1.0, True, None)
    assert quick.num_envs == 16 and quick.n_updates == 2 and (16 * 48) % quick.n_minibatches == 0
    capped = ts.scaled_config(cfg.replace(n_minibatches=64), 1e-9, False, 3)
    assert capped.num_envs == 3 and capped.n_updates == 1 and (3 * 48) % capped.n_minibatches == 0


def test_markdown_and_json_of_a_run(ts, tmp_path):
    agent = _results()
    base = {"weak": _baseline(5.0, [0.0, 1.0]), "strong": _baseline(15.0, [0.0, 3.0])}
    split = ts.summarize_split(agent, base, ["a", "b"], "weak", "strong", thresholds={"a": 0.0})
    run = {
        "task": "t", "preset": "p-safe", "algo": "ppo_lagrangian", "test_split": "iid", "splits": {"iid": split, "ood": split},
        "training": {"env_steps_per_seed": 1536, "preset_total_timesteps": 3_000_000, "num_envs": 16, "n_updates": 2,
                     "compile_s": 1.0, "train_s": 2.0, "env_steps_per_s": 3840.0},
        "eval_s": 1.0, "wall_s": 4.0, "curves": {"env_steps": [[1.0, 2.0]], "episode_return": [[math.nan, 1.0]]},
    }
    results = {"hardware_name": "CPU x", "date": "2026-12-06", "n_seeds": 5, "eval_episodes": 3, "budget_scale": 1.0,
               "quick": True, "runs": [run, {"task": "t", "preset": "broken", "error": "ValueError: x"}]}
    table = ts.markdown_tables(results)
    assert "| p-safe | ppo_lagrangian | iid (test) |" in table and "| p-safe | ppo_lagrangian | ood |" in table
    assert "a ≤ 0: met" in table and "broken | | | failed: ValueError: x" in table
    assert "3,840" in table
    path = tmp_path / "r.json"
    ts.write_json(str(path), results)
    back = json.loads(path.read_text())  # strict JSON: NaN written as null
    assert back["runs"][0]["curves"]["episode_return"] == [[None, 1.0]]
    assert ts.markdown_tables(back).splitlines()[4] == table.splitlines()[4]


def test_a_results_json_is_resummarised_from_its_episodes(ts, tmp_path):
    agent = _results()
    base = {"weak": _baseline(5.0, [0.0, 1.0]), "strong": _baseline(15.0, [0.0, 3.0])}
    split = ts.summarize_split(agent, base, ["a", "b"], "no_control", "droop")
    run = {"task": "dso", "preset": "dso-nflex", "channels": ["a", "b"], "constrained": None, "floor": "weak",
           "ceiling": "strong", "splits": {"iid": split}, "episodes": ts.jsonable({"iid": {"agent": agent, "baselines": base}})}
    path = tmp_path / "r.json"
    ts.write_json(str(path), {"runs": [run]})
    again = ts.resummarize(json.loads(path.read_text()))["runs"][0]["splits"]["iid"]
    assert math.isnan(split["norm_score"])  # the anchors named in the run were not baselines of the split
    assert again["norm_score"] == pytest.approx(ts.summarize_split(agent, base, ["a", "b"], "weak", "strong")["norm_score"])
    assert again["return"]["iqm"] == pytest.approx(split["return"]["iqm"])


@pytest.mark.slow
@pytest.mark.requires("powerzoojax.grid")
def test_quick_run_of_one_preset_writes_scores_and_curves(ts, tmp_path):
    """`--quick` end to end on one preset with two seeds (minutes: it compiles a trainer)."""
    out = tmp_path / "scores.json"
    rc = ts.main(["--quick", "--tasks", "dso", "--presets", "dso-nflex", "--seeds", "2", "--out", str(out)])
    assert rc == 0
    results = json.loads(out.read_text())
    (run,) = results["runs"]
    assert set(run["splits"]) == {"iid", "summer_ood", "zone_holdout"}
    assert run["training"]["n_updates"] == 2 and run["training"]["n_seeds"] == 2
    assert np.asarray(run["curves"]["env_steps"]).shape == (2, 2)
    assert np.isfinite(run["splits"]["iid"]["return"]["iqm"])
    assert set(run["splits"]["iid"]["baselines"]) == {"no_control", "tou", "droop"}
    png = ts.plot(results, str(tmp_path / "curves.png"))
    assert Path(png).stat().st_size > 0
