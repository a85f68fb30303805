"""How fast can a PPO update of a given network be on this device? An upper bound on the
training throughput that no env speed-up can lift.

A PPO update passes every collected sample through the actor-critic `epochs` times,
forward and backward: about 3 x 2 x (multiply-adds of one forward pass) floating-point
operations per sample and epoch, almost all of them in the dense layers. This script
measures the device's float32 rate on exactly those dense products (each layer's
forward product and its two backward products, at the minibatch's shape, in one jitted
program) and divides: the result is the env-steps/s at which the update alone would take
all the time, with an env that cost nothing.

    uv run python benchmarks/update_bound.py --preset tso-uc
    uv run python benchmarks/update_bound.py --obs 410 --act 108 --hidden 256 256 --samples 3072 --epochs 4 --minibatches 4
"""

import argparse
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp


def _layers(obs: int, act: int, hidden: tuple[int, ...]) -> list[tuple[int, int]]:
    # Separate actor and critic torsos (the presets' networks): the actor to the action
    # mean (its log-std is state-independent), the critic to one value.
    widths = [obs, *hidden]
    torso = list(zip(widths[:-1], widths[1:]))
    return torso + [(widths[-1], act)] + torso + [(widths[-1], 1)]


def measure(obs: int, act: int, hidden: tuple[int, ...], samples: int, epochs: int, minibatches: int, repeats: int) -> dict:
    layers = _layers(obs, act, hidden)
    batch = samples // minibatches
    macs_per_sample = sum(i * o for i, o in layers)
    flops_per_update = 3 * 2 * macs_per_sample * samples * epochs
    key = jax.random.PRNGKey(0)
    xs = [jax.random.normal(k, (batch, i), jnp.float32) for k, (i, _) in zip(jax.random.split(key, len(layers)), layers)]
    ws = [jax.random.normal(k, (i, o), jnp.float32) for k, (i, o) in zip(jax.random.split(key + 1, len(layers)), layers)]
    gs = [jax.random.normal(k, (batch, o), jnp.float32) for k, (_, o) in zip(jax.random.split(key + 2, len(layers)), layers)]
    hi = jax.lax.Precision.HIGHEST
    n_minibatch_passes = epochs * minibatches

    @jax.jit
    def update_products(xs, ws, gs):
        def one(carry, _):
            total = carry
            for x, w, g in zip(xs, ws, gs):
                y = jnp.dot(x + total, w, precision=hi)  # forward
                dx = jnp.dot(g + total, w.T, precision=hi)  # backward to the input
                dw = jnp.dot(x.T, g + total, precision=hi)  # backward to the weights
                total = total + 1e-30 * (y.sum() + dx.sum() + dw.sum())
            return total, None

        return jax.lax.scan(one, jnp.zeros((), jnp.float32), None, length=n_minibatch_passes)[0]

    jax.block_until_ready(update_products(xs, ws, gs))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(update_products(xs, ws, gs))
        times.append(time.perf_counter() - t0)
    seconds = statistics.median(times)
    return {
        "macs_per_sample": macs_per_sample,
        "gflop_per_update": flops_per_update / 1e9,
        "update_s": seconds,
        "gflop_per_s": flops_per_update / seconds / 1e9,
        "env_steps_per_s_cap": samples / seconds,
    }


def _preset_shape(name: str) -> tuple[int, int, tuple[int, ...], int, int, int]:
    from powerzoojax.rl.training import get_preset

    preset = get_preset(name)
    made = preset.env_factory()  # an env wrapped with its params bound (LogWrapper, SafeRLWrapper)
    env, params = made.env, made.params
    obs = int(env.observation_space(params).shape[-1])
    act = int(env.action_space(params).shape[-1])
    c = preset.config
    epochs, minibatches = getattr(c, "n_epochs"), getattr(c, "n_minibatches")  # the PPO family's
    return obs, act, tuple(c.hidden_dims), c.num_envs * c.n_steps, epochs, minibatches


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--preset", help="take the shapes from a training preset")
    ap.add_argument("--obs", type=int, default=410)
    ap.add_argument("--act", type=int, default=108)
    ap.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    ap.add_argument("--samples", type=int, default=3072, help="env steps collected per update")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--minibatches", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    shape = (args.obs, args.act, tuple(args.hidden), args.samples, args.epochs, args.minibatches)
    if args.preset:
        shape = _preset_shape(args.preset)
    obs, act, hidden, samples, epochs, minibatches = shape
    device = jax.devices()[0]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"JAX {jax.__version__} on {device.platform} ({device.device_kind}); {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {load:.1f}")
    r = measure(obs, act, hidden, samples, epochs, minibatches, args.repeats)
    print(f"network {obs} -> {hidden} -> {act} (actor) / 1 (critic); {samples:,} samples x {epochs} epochs "
          f"in {minibatches} minibatches")
    print(f"{r['macs_per_sample']:,} multiply-adds per sample forward; {r['gflop_per_update']:.1f} GFLOP per update")
    print(f"dense products of one update: {r['update_s'] * 1e3:.0f} ms ({r['gflop_per_s']:.1f} GFLOP/s float32)")
    print(f"training cap from the update alone: {r['env_steps_per_s_cap']:,.0f} env-steps/s")


if __name__ == "__main__":
    main()
