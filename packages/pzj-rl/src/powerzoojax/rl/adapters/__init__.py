"""Adapters to the common RL interfaces: Gymnasium (`pip install 'pzj-rl[gym]'`) and
PettingZoo (`pip install 'pzj-rl[pettingzoo]'`).

- `GymnasiumEnv`: one single-agent env as a `gymnasium.Env`;
- `GymnasiumVectorEnv`: N copies as a `gymnasium.vector.VectorEnv` whose `step`
  is one call of the jitted, vmapped step (next-step autoreset);
- `PettingZooParallelEnv`: a multi-agent adapter as a PettingZoo `ParallelEnv`;
- `make_gymnasium_env`, `make_gymnasium_vector_env`, `make_pettingzoo_env`:
  the same from a registry id (`powerzoojax.envs.list_envs()`);
- `register_gymnasium_envs`: the ids in Gymnasium's registry (`powerzoojax/<id>`);
- `to_gymnasium_space`: our spaces as Gymnasium's.

Nothing here runs inside `jit`: these are host-side shells around the compiled env.
Gymnasium and PettingZoo are imported on first use of a name, so `import
powerzoojax.rl.adapters` works without them and a missing one is named with its extra.
"""

import importlib
from typing import Any

# public name -> (module, the pzj-rl extra whose packages it needs)
_LAZY: dict[str, tuple[str, str]] = {
    "GymnasiumEnv": ("powerzoojax.rl.adapters._gymnasium_env", "gym"),
    "GymnasiumVectorEnv": ("powerzoojax.rl.adapters._gymnasium_vector", "gym"),
    "PettingZooParallelEnv": ("powerzoojax.rl.adapters._pettingzoo", "pettingzoo"),
    "make_gymnasium_env": ("powerzoojax.rl.adapters._factories", "gym"),
    "make_gymnasium_vector_env": ("powerzoojax.rl.adapters._factories", "gym"),
    "make_pettingzoo_env": ("powerzoojax.rl.adapters._factories", "pettingzoo"),
    "register_gymnasium_envs": ("powerzoojax.rl.adapters._factories", "gym"),
    "to_gymnasium_space": ("powerzoojax.rl.adapters._spaces", "gym"),
}
_THIRD_PARTY = {"gymnasium": "gym", "pettingzoo": "pettingzoo"}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module_name, extra = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'powerzoojax.rl.adapters' has no attribute {name!r}") from None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        top = (err.name or "").split(".")[0]
        if top in _THIRD_PARTY:
            raise ImportError(f"{name} needs {top}, which is not installed: pip install 'pzj-rl[{_THIRD_PARTY[top]}]'") from err
        raise
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
