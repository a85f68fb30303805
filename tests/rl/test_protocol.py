"""Evaluation-protocol statistics and bookkeeping (spec §4.3) against SciPy and by hand."""

import json
import pathlib

import numpy as np
import pytest


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 13, 20])
def test_iqm_matches_scipy_trim_mean(n):
    from scipy.stats import trim_mean

    from powerzoojax.rl import iqm

    x = np.random.default_rng(n).normal(size=n) * 10
    assert iqm(x) == pytest.approx(float(trim_mean(x, 0.25)), rel=1e-12)


@pytest.mark.parametrize("n", [3, 5, 8, 12])
def test_paired_sign_flip_test_matches_scipy_exact_permutation_test(n):
    from scipy.stats import permutation_test

    from powerzoojax.rl import paired_sign_flip_test

    rng = np.random.default_rng(100 + n)
    a = rng.normal(size=n)
    b = a + rng.normal(0.4, 1.0, size=n)
    ref = permutation_test(
        (a, b), lambda x, y: np.mean(x - y), permutation_type="samples", alternative="two-sided",
        n_resamples=np.inf, vectorized=False,
    )
    assert paired_sign_flip_test(a, b) == pytest.approx(float(ref.pvalue), rel=1e-9)


def test_bootstrap_ci_agrees_with_scipy_percentile_bootstrap():
    from scipy.stats import bootstrap

    from powerzoojax.rl import bootstrap_ci

    x = np.random.default_rng(7).normal(5.0, 2.0, size=40)
    low, high = bootstrap_ci(x, n_resamples=20_000, seed=1)
    ref = bootstrap((x,), np.mean, method="percentile", n_resamples=20_000, random_state=2).confidence_interval
    tol = 0.05 * (ref.high - ref.low)  # Monte-Carlo error of two independent bootstraps
    assert low == pytest.approx(ref.low, abs=tol) and high == pytest.approx(ref.high, abs=tol)
    assert low < x.mean() < high


def test_manifest_round_trip_and_summary(tmp_path):
    from scipy.stats import trim_mean

    from powerzoojax.rl import RunRecord, load_manifest, summarize, write_manifest

    profits = {"ippo": [10.0, 12.0, 11.0, 30.0], "truthful_ppo": [5.0, 6.0, 4.0, 5.5]}
    records = [
        RunRecord("gencos", algo, seed, f"{algo}-{seed}", "unsafe" if (algo, seed) == ("ippo", 3) else "ok", "iid",
                  {"total_profit": v}, walltime_s=1.0 + seed, throughput_sps=1e5)
        for algo, vs in profits.items() for seed, v in enumerate(vs)
    ]
    path = write_manifest(records[:3], tmp_path)
    write_manifest(records[2:], tmp_path)  # merges, the shared record once
    loaded = load_manifest(tmp_path)
    assert len(loaded) == 8 and {r.run_id for r in loaded} == {r.run_id for r in records}
    assert set(json.loads(pathlib.Path(path).read_text())["runs"][0]) == {
        "task", "algo", "seed", "run_id", "status", "split", "metrics", "walltime_s", "throughput_sps", "timestamp"
    }
    summary = summarize(loaded, "total_profit", baselines={"gencos": (6.9, 598.0)}, summary_dir=tmp_path / "summary",
                        n_resamples=2000)
    assert json.loads((tmp_path / "summary" / "latest.json").read_text()) == summary
    ippo = summary["tasks"]["gencos"]["ippo"]["iid"]
    x = np.asarray(profits["ippo"])
    assert ippo["n_seeds"] == 4 and ippo["mean"] == pytest.approx(x.mean()) and ippo["std"] == pytest.approx(x.std(ddof=1))
    assert ippo["iqm"] == pytest.approx(trim_mean(x, 0.25))
    assert ippo["norm_score"] == pytest.approx((trim_mean(x, 0.25) - 6.9) / (598.0 - 6.9))
    assert ippo["norm_score_status"] == "ok"
    assert ippo["leaderboard_eligible"] is False and ippo["n_unsafe"] == 1  # reported, not eligible
    assert summary["tasks"]["gencos"]["truthful_ppo"]["iid"]["leaderboard_eligible"] is True
    with pytest.raises(ValueError, match="status"):
        RunRecord("t", "a", 0, "r", "great", "iid", {}, 0.0)
