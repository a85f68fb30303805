"""Adapters straight from registry ids, and the ids in Gymnasium's own registry."""

from typing import Any

from powerzoojax.envs import list_envs, make
from powerzoojax.rl.adapters._gymnasium_env import GymnasiumEnv
from powerzoojax.rl.adapters._gymnasium_vector import GymnasiumVectorEnv

GYMNASIUM_NAMESPACE = "powerzoojax"


def _single_agent(env_id: str, overrides: dict[str, Any], owner: str) -> tuple[Any, Any]:
    env, params = make(env_id, **overrides)
    if hasattr(env, "step_arrays"):
        raise TypeError(f"{owner}: {env_id!r} is a multi-agent id; use make_pettingzoo_env({env_id!r})")
    return env, params


def make_gymnasium_env(env_id: str, *, render_mode: str | None = None, **overrides: Any) -> GymnasiumEnv:
    """A `GymnasiumEnv` of a registry id.

    **Arguments:**

    - `env_id`: a single-agent id of `powerzoojax.envs.list_envs`.
    - `render_mode`: None or `"rgb_array"`.
    - `overrides`: passed to `powerzoojax.envs.make` (`max_steps=24`, ...).

    **Returns:** the env; a multi-agent id raises `TypeError` pointing to
    `make_pettingzoo_env`.
    """
    env, params = _single_agent(env_id, overrides, "make_gymnasium_env")
    return GymnasiumEnv(env, params, render_mode=render_mode, env_id=env_id)


def make_gymnasium_vector_env(
    env_id: str, num_envs: int, *, autoreset_mode: Any = "NextStep", render_mode: str | None = None, **overrides: Any
) -> GymnasiumVectorEnv:
    """A `GymnasiumVectorEnv` of `num_envs` copies of a registry id.

    **Arguments:**

    - `env_id`: a single-agent id.
    - `num_envs`: the batch size N.
    - `autoreset_mode`: `"NextStep"` (default) or `"Disabled"` (or the
      `gymnasium.vector.AutoresetMode` members).
    - `render_mode`: None or `"rgb_array"`.
    - `overrides`: passed to `powerzoojax.envs.make`.

    **Returns:** the vector env.
    """
    env, params = _single_agent(env_id, overrides, "make_gymnasium_vector_env")
    return GymnasiumVectorEnv(env, params, num_envs, autoreset_mode=autoreset_mode, render_mode=render_mode, env_id=env_id)


def make_pettingzoo_env(env_id: str, *, render_mode: str | None = None, **overrides: Any) -> Any:
    """A `PettingZooParallelEnv` of a multi-agent registry id (`GridMARL-case5-v0`, ...).

    **Arguments:**

    - `env_id`: a multi-agent id of `list_envs(multi_agent=True)`.
    - `render_mode`: None or `"rgb_array"`.
    - `overrides`: passed to `powerzoojax.envs.make`.

    **Returns:** the parallel env; a single-agent id raises `TypeError` pointing to
    `make_gymnasium_env`.
    """
    from powerzoojax.rl.adapters._pettingzoo import PettingZooParallelEnv

    env, _ = make(env_id, **overrides)
    if not hasattr(env, "step_arrays"):
        raise TypeError(f"make_pettingzoo_env: {env_id!r} is a single-agent id; use make_gymnasium_env({env_id!r})")
    return PettingZooParallelEnv(env, render_mode=render_mode, env_id=env_id)


def _gymnasium_vector_entry_point(env_id: str, num_envs: int, **kwargs: Any) -> GymnasiumVectorEnv:
    return make_gymnasium_vector_env(env_id, num_envs, **kwargs)


def register_gymnasium_envs() -> list[str]:
    """Register every single-agent id here with Gymnasium, as `"powerzoojax/<id>"` (an id
    with a namespace of its own, `"mylab/Env-v0"`, keeps it), so
    `gymnasium.make("powerzoojax/TransGrid-case5-dc-v0", max_steps=24)` and
    `gymnasium.make_vec(..., num_envs=N, vectorization_mode="vector_entry_point")` (one
    jitted batch, `GymnasiumVectorEnv`) work. Ids already registered are left alone.

    **Returns:** the Gymnasium ids registered by this call.
    """
    import gymnasium

    added = []
    for env_id in list_envs(multi_agent=False):
        gym_id = env_id if "/" in env_id else f"{GYMNASIUM_NAMESPACE}/{env_id}"
        if gym_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=gym_id,
            entry_point=make_gymnasium_env,
            vector_entry_point=_gymnasium_vector_entry_point,
            kwargs={"env_id": env_id},
        )
        added.append(gym_id)
    return added
