"""Running mean and variance of a stream of batches, and normalisation by them.

One implementation for every user: PPO's and IPPO's observation and return scaling,
SAC's reward scaling and the `NormalizeObservation` wrapper.
"""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

# Normalised values are clipped to ±this many standard deviations.
OBS_CLIP = 10.0


class RunningStats(eqx.Module):
    """Running mean / variance (parallel Welford merge of whole batches).

    **Arguments:**

    - `mean`, `var`: running mean and variance, the shape of one sample.
    - `count`: number of samples merged so far (plus a tiny prior), a scalar.
    """

    mean: Float[Array, "*shape"]
    var: Float[Array, "*shape"]
    count: Float[Array, ""]


def init_stats(shape: tuple[int, ...]) -> RunningStats:
    """Statistics of no data yet: mean 0, variance 1.

    **Arguments:**

    - `shape`: the shape of one sample.

    **Returns:**

    A [`RunningStats`][powerzoojax.rl.wrappers.RunningStats] with a prior count of `1e-4`
    (it keeps the first merge well defined and is outweighed by it).
    """
    return RunningStats(jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32), jnp.asarray(1e-4, jnp.float32))


def update_stats(stats: RunningStats, batch: Float[Array, "n *shape"]) -> RunningStats:
    """Merge a batch into the running statistics.

    **Arguments:**

    - `stats`: the statistics so far.
    - `batch`: samples, leading axis = samples, shape `(n, *shape)`.

    **Returns:** the statistics of everything merged so far, the batch included.
    """
    n = jnp.asarray(batch.shape[0], jnp.float32)
    batch_mean = jnp.mean(batch, axis=0)
    batch_var = jnp.var(batch, axis=0)
    total = stats.count + n
    delta = batch_mean - stats.mean
    mean = stats.mean + delta * n / total
    m2 = stats.var * stats.count + batch_var * n + delta**2 * stats.count * n / total
    return RunningStats(mean, m2 / total, total)


def normalize(stats: RunningStats, x: Float[Array, "*batch"], clip: float = OBS_CLIP) -> Float[Array, "*batch"]:
    """`(x − mean) / √(var + 1e-8)`, clipped to `[−clip, clip]`.

    **Arguments:**

    - `stats`: the statistics to normalise by.
    - `x`: values, trailing axes the shape of one sample.
    - `clip`: bound of the result, in standard deviations.

    **Returns:** the normalised values, the shape of `x`.
    """
    # The statistics broadcast over the leading (batch) axes of `x`.
    lead = (1,) * (x.ndim - stats.mean.ndim)
    mean = jnp.reshape(stats.mean, lead + stats.mean.shape)
    std = jnp.reshape(jnp.sqrt(stats.var + 1e-8), lead + stats.var.shape)
    return jnp.clip((x - mean) / std, -clip, clip)
