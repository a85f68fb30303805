"""Cost of the Gymnasium vector adapter: env-steps/s of ``GymnasiumVectorEnv.step`` (NumPy
actions in, NumPy obs / rewards / flags / infos out, next-step autoreset) against the raw
jitted batched step it wraps, at each N, on one env id.

Both loops take one step per Python call, ``--steps`` timed calls after two warm-up calls
(the compile), median of ``--repeats``:

* ``raw``: ``jax.jit(vmap(env.step))`` on device arrays, keys split inside, the outputs
  blocked on every call (the adapter must wait for its results too), nothing copied out;
* ``adapter``: ``GymnasiumVectorEnv.step`` on pre-drawn NumPy actions: the same step plus
  the autoreset selects, the transfer of obs, rewards, costs, flags and the whole info dict to
  NumPy, and the info masks.

``ratio`` = adapter / raw env-steps/s (1.0 = free).

    uv run python benchmarks/gym_vector_adapter.py                       # N = 1, 64, 1024
    uv run python benchmarks/gym_vector_adapter.py --env-id DistGrid-case33bw-v0 --n-envs 1 64 --steps 50
    uv run python benchmarks/gym_vector_adapter.py --markdown results/gym_vector_adapter.md
"""

import argparse
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

from powerzoojax.envs import make
from powerzoojax.rl.adapters import GymnasiumVectorEnv


def time_raw(env, params, n_envs: int, steps: int, repeats: int) -> float:
    @jax.jit
    def step(keys, states, actions):
        split = jax.vmap(jr.split)(keys)
        obs, states, reward, costs, done, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(split[:, 1], states, actions, params)
        return split[:, 0], states, obs, reward, costs, done, info

    keys = jr.split(jr.PRNGKey(0), n_envs)
    _, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    space = env.action_space(params)
    actions = jax.vmap(space.sample)(jr.split(jr.PRNGKey(1), n_envs))
    rates = []
    for _ in range(2):
        keys, states, *out = step(keys, states, actions)
        jax.block_until_ready(out)
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            keys, states, *out = step(keys, states, actions)
            jax.block_until_ready(out)
        rates.append(n_envs * steps / (time.perf_counter() - start))
    return statistics.median(rates)


def time_adapter(env, params, n_envs: int, steps: int, repeats: int) -> float:
    venv = GymnasiumVectorEnv(env, params, n_envs)
    venv.reset(seed=0)
    venv.action_space.seed(0)
    actions = [venv.action_space.sample() for _ in range(steps)]
    for a in actions[:2]:
        venv.step(a)
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for a in actions:
            venv.step(a)
        rates.append(n_envs * steps / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="TransGrid-case5-dc-v0")
    parser.add_argument("--n-envs", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=48, help="episode length (autoresets happen in the timed loop)")
    parser.add_argument("--markdown", help="append the table to this file")
    args = parser.parse_args()

    env, params = make(args.env_id, max_steps=args.max_steps)
    rows = []
    for n in args.n_envs:
        raw = time_raw(env, params, n, args.steps, args.repeats)
        adapter = time_adapter(env, params, n, args.steps, args.repeats)
        rows.append((n, raw, adapter))
        print(f"{args.env_id} N={n:5d}: raw {raw:12,.0f}  adapter {adapter:12,.0f} env-steps/s  ratio {adapter / raw:.2f}", flush=True)
    load = os.getloadavg()
    header = (
        f"`{args.env_id}`, max_steps {args.max_steps}, {args.steps} timed steps x {args.repeats} repeats (median); "
        f"{platform.machine()}, {os.cpu_count()} CPUs, JAX {jax.__version__} {jax.default_backend()}, "
        f"load average {load[0]:.1f} / {load[1]:.1f}"
    )
    table = ["| N | raw jitted batched step, env-steps/s | GymnasiumVectorEnv.step, env-steps/s | ratio |", "|---|---|---|---|"]
    table += [f"| {n} | {raw:,.0f} | {adapter:,.0f} | {adapter / raw:.2f} |" for n, raw, adapter in rows]
    print(header)
    print("\n".join(table))
    if args.markdown:
        with open(args.markdown, "a", encoding="utf-8") as fh:
            fh.write(header + "\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    jnp.zeros(())  # start the backend before timing anything
    main()
