"""TrainConfig, YAML round trip, validation."""

import dataclasses

import pytest


def test_defaults_follow_the_spec_table():
    from powerzoojax.rl import TrainConfig

    c = TrainConfig()
    assert (c.algo, c.total_timesteps, c.num_envs, c.seed) == ("ppo", 100_000, 64, 42)
    assert (c.n_steps, c.n_epochs, c.n_minibatches, c.clip_eps, c.gae_lambda) == (128, 4, 4, 0.2, 0.95)
    assert c.hidden_dims == (64, 64) and c.cost_thresholds == () and c.lambda_lr == 5e-3
    assert c.n_updates == 100_000 // (64 * 128)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.seed = 1  # type: ignore[misc]


def test_replace_coerces_types():
    from powerzoojax.rl import TrainConfig

    c = TrainConfig().replace(learning_rate=1, hidden_dims=[32, 32], normalize_rewards="true", total_timesteps=2e4)
    assert c.learning_rate == 1.0 and isinstance(c.learning_rate, float)
    assert c.hidden_dims == (32, 32) and c.normalize_rewards is True and c.total_timesteps == 20_000
    with pytest.raises(TypeError, match="no field"):
        TrainConfig().replace(learning_rat=1.0)


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("algo", "a2c", "algo must be one of"),
        ("num_envs", 0, "num_envs must be a positive integer"),
        ("gamma", 1.5, "gamma must be in"),
        ("hidden_dims", (), "hidden_dims"),
        ("lambda_lr", (0.1, -1.0), "lambda_lr must be positive"),
        ("cost_thresholds", (-1.0,), "cost_thresholds"),
        ("continuous_action_dist", "cauchy", "continuous_action_dist"),
    ],
)
def test_bad_values_are_rejected(field, value, match):
    from powerzoojax.rl import TrainConfig

    with pytest.raises(ValueError, match=match):
        TrainConfig().replace(**{field: value})


def test_resolved_per_constraint_values():
    from powerzoojax.rl import TrainConfig

    c = TrainConfig(lambda_lr=(0.1, 0.2), cost_scale=10.0)
    assert c.resolved_lambda_lr(2) == (0.1, 0.2) and c.resolved_cost_scale(3) == (10.0,) * 3
    assert c.resolved_cost_thresholds(2) is None  # the wrapper's thresholds apply
    assert TrainConfig(cost_threshold=5.0).resolved_cost_thresholds(2) == (5.0, 5.0)
    with pytest.raises(ValueError, match="expected 1 or 3"):
        c.resolved_lambda_lr(3)


def test_yaml_round_trip(tmp_path):
    from powerzoojax.rl import TrainConfig, load_config, save_config

    c = TrainConfig(algo="ppo_lagrangian", hidden_dims=(32, 16), cost_thresholds=(1.0, 2.0), lambda_lr=(0.1, 0.2))
    path = tmp_path / "c.yaml"
    save_config(c, path)
    text = path.read_text()
    assert "\nhidden_dims: [32, 16]  # hidden widths of the networks." in text
    assert "\nn_checkpoints: 1  # policy snapshots kept in memory" in text  # every key says what it does
    assert load_config(path) == c
    assert load_config(c._asdict()) == c


def test_eval_episodes_is_read_as_eval_num_episodes_in_a_file_and_refused_when_set(tmp_path):
    from powerzoojax.rl import TrainConfig, load_config

    path = tmp_path / "c.yaml"
    path.write_text("eval_episodes: 6\n")
    assert load_config(path).eval_num_episodes == 6
    path.write_text("eval_episodes: 6\neval_num_episodes: 3\n")
    assert load_config(path).eval_num_episodes == 3  # the field that counts wins
    with pytest.raises(ValueError, match=r"eval_episodes=6 is not supported: .*eval_num_episodes"):
        TrainConfig(eval_episodes=6)


def test_reference_only_keywords_are_accepted_at_their_defaults_and_refused_otherwise(tmp_path):
    import dataclasses

    from powerzoojax.rl import TrainConfig, load_config
    from powerzoojax.rl.algos._config import ConfigFileError

    default = TrainConfig()
    assert TrainConfig(eval_episodes=128, n_eval_envs=0, wall_time_warmup_timesteps=None) == default
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    assert not {"eval_episodes", "n_eval_envs", "wall_time_warmup_timesteps", "minibatch_shuffle"} & names
    with pytest.raises(ValueError, match=r"n_eval_envs=8 is not supported: .*eval_freq"):
        TrainConfig(algo="ppo_lagrangian", n_eval_envs=8)
    with pytest.raises(ValueError, match=r"wall_time_warmup_timesteps=1000 is not supported"):
        TrainConfig(wall_time_warmup_timesteps=1000)
    with pytest.raises(ValueError, match=r"n_eval_envs=2 is not supported"):
        default.replace(n_eval_envs=2)
    # An older run folder's complete file holds them at the values every run used.
    path = tmp_path / "c.yaml"
    path.write_text("n_eval_envs: 0\nwall_time_warmup_timesteps: null\nminibatch_shuffle: blocks\nnum_envs: 8\n")
    assert load_config(path) == default.replace(num_envs=8)
    path.write_text("minibatch_shuffle: full\n")
    with pytest.raises(ConfigFileError, match=r"minibatch_shuffle='full' is not supported"):
        load_config(path)
    path.write_text("n_eval_envs: 4\n")
    with pytest.raises(ConfigFileError, match=r"n_eval_envs=4 is not supported"):
        load_config(path)


@pytest.mark.parametrize("algo, hint", [("td3", "use 'sac'"), ("dqn", "continuous actions"), ("mappo", "ippo")])
def test_algorithms_the_reference_names_but_nothing_trains_are_refused_when_the_config_is_built(algo, hint):
    from powerzoojax.rl import TrainConfig

    with pytest.raises(NotImplementedError, match=rf"algo '{algo}' is not implemented; algorithms: \['ppo'.*{hint}"):
        TrainConfig(algo=algo)
    with pytest.raises(ValueError, match="is not implemented"):
        TrainConfig().replace(algo=algo)
    with pytest.raises(ValueError, match=r"algo must be one of"):
        TrainConfig(algo="a2c")


def test_load_config_aliases_and_warns_on_unknown_keys(tmp_path):
    from powerzoojax.rl import load_config

    path = tmp_path / "c.yaml"
    path.write_text("lr: 0.001\nnum_envs: 8\nmystery: 3\n")
    with pytest.warns(UserWarning, match=r"unknown config key\(s\) \['mystery'\]"):
        c = load_config(path)
    assert c.learning_rate == 0.001 and c.num_envs == 8


def test_train_config_builds_the_family_config_and_refuses_knobs_the_algorithm_does_not_read(tmp_path):
    from powerzoojax.rl import APGConfig, PPOConfig, SACConfig, TrainConfig, load_config

    assert type(TrainConfig()) is PPOConfig and type(TrainConfig(algo="ippo_typed")) is PPOConfig
    sac = TrainConfig(algo="sac", sac_num_epochs=2, normalize_rewards=True)
    assert type(sac) is SACConfig and isinstance(sac, TrainConfig) and sac.sac_num_epochs == 2
    assert type(TrainConfig(algo="apg", n_steps=8)) is APGConfig
    with pytest.raises(TypeError, match=r"SACConfig \(algo sac\) has no field\(s\) clip_eps \(configures ppo, "):
        TrainConfig(algo="sac", clip_eps=0.1)
    with pytest.raises(TypeError, match=r"n_minibatches \(configures ppo"):
        TrainConfig(algo="apg", n_minibatches=4)
    with pytest.raises(ValueError, match=r"SACConfig configures \['sac'\], not algo='ppo'"):
        SACConfig(algo="ppo")
    # Switching algorithm keeps the common fields and those both families have.
    ppo = TrainConfig(num_envs=8, hidden_dims=(16,), ent_coef=0.0, normalize_rewards=True)
    switched = ppo.replace(algo="sac", sac_num_epochs=3)
    assert type(switched) is SACConfig and switched.num_envs == 8 and switched.hidden_dims == (16,)
    assert switched.normalize_rewards and switched.sac_num_epochs == 3
    assert ppo.replace(algo="apg", seed=3, num_envs=2) == TrainConfig(algo="apg", seed=3, num_envs=2, hidden_dims=(16,))
    assert switched.replace(algo="ppo") == TrainConfig(num_envs=8, hidden_dims=(16,), normalize_rewards=True)
    # A knob given with the switch that the new family does not read is refused, not dropped.
    with pytest.raises(TypeError, match=r"TrainConfig.replace: SACConfig \(algo sac\) has no field\(s\) n_epochs \(configures ppo"):
        ppo.replace(algo="sac", n_epochs=3)
    with pytest.raises(TypeError, match=r"APGConfig \(algo apg\) has no field\(s\) clip_eps \(configures ppo"):
        ppo.replace(algo="apg", clip_eps=0.1)
    # A file names one family's fields; a field of another family is named as such.
    path = tmp_path / "c.yaml"
    path.write_text("algo: sac\nsac_num_epochs: 4\n")
    assert load_config(path) == TrainConfig(algo="sac", sac_num_epochs=4)
    from powerzoojax.rl.algos._config import ConfigFileError

    path.write_text("algo: sac\nclip_eps: 0.1\n")
    with pytest.raises(ConfigFileError, match=r"unknown key\(s\) \['clip_eps'\].*configures ppo"):
        load_config(path, base=ppo)


def test_a_saved_config_of_every_field_still_loads_as_its_family():
    from powerzoojax.rl import TrainConfig, load_config

    # What a run folder of an earlier version holds: every field, the other families' at their defaults.
    saved = {**TrainConfig()._asdict(), **TrainConfig(algo="sac")._asdict(), "eval_episodes": 128, "n_eval_envs": 0,
             "wall_time_warmup_timesteps": None, "minibatch_shuffle": "blocks", "num_envs": 16}
    assert load_config(saved) == TrainConfig(algo="sac", num_envs=16)


def test_overrides_of_a_run_must_be_knobs_of_its_algorithm():
    from powerzoojax.rl.algos._config import check_knobs

    check_knobs("sac", {"algo": "sac", "sac_num_epochs": 2, "num_envs": 4, "n_eval_envs": 0})
    with pytest.raises(TypeError, match=r"SACConfig \(algo sac\) has no field\(s\) n_minibatches \(configures ppo"):
        check_knobs("sac", {"algo": "sac", "n_minibatches": 4})
    with pytest.raises(TypeError, match=r"mystery \(no such field\)"):
        check_knobs("ppo", {"mystery": 1})
