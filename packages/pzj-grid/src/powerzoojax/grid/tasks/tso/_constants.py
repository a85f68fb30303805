"""The TSO task's constants: its data splits and their stress factors, the net-load
weights, the benchmark's line-rating angle, window and load preview, and the
unit-commitment defaults of a case without them.
"""

TSO_SPLITS = ("train", "iid", "load_stress", "line_tightening")
LOAD_STRESS_FACTOR = 1.15
LINE_TIGHTENING_FACTOR = 0.85
WIND_FRAC, SOLAR_FRAC = 0.7, 0.5
BENCHMARK_ANGLE_DEG = 8.0
WINDOW_STEPS = 48

# The frozen benchmark's perfect load preview: obs 4G + L + 4 + 4 = 410 on
# case118. The case factories keep the reference's default 0 (obs 406); the ED / UC / SCUC
# variants, the presets and `TSOTask` build the benchmark env, so they default to it.
TSO_FORECAST_HORIZON = 4

# Unit-commitment defaults the reference gives case14 when its table lacks them: ramp 0.5
# p_max/h, min up/down 2 steps, start-up $1000, no-load $100/h, all on for 10 steps, p_min.
CASE14_UC_DEFAULTS = dict(
    unit_ramp_up=0.5, unit_ramp_down=0.5, unit_min_up_time=2.0, unit_min_down_time=2.0, unit_startup_cost=1000.0,
    unit_no_load_cost=100.0, unit_init_state=1.0, unit_keep_time=10.0,
)
