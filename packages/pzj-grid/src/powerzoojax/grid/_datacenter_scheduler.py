"""GPU task queue of the data-centre model (spec §4.7): Poisson arrivals into a fixed
64-slot masked buffer and the earliest-deadline greedy scheduler.

Every function is pure, fixed-shape and branch-free, so the queue runs unchanged under
``jit``/``vmap``/``scan``. Slot order carries no meaning: a task is identified by its slot
for as long as it lives there.

Status codes: 0 free, 1 waiting, 2 running. Task types: 0 training, 1 fine-tuning.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.core._types import IntScalar

N_TASK_SLOTS = 64
# At most this many arrivals per task type per step (spec: min(Poisson, 5)).
MAX_ARRIVALS = 5
N_TASK_TYPES = 2
FREE, WAITING, RUNNING = 0, 1, 2
# Uniform draws one step needs: per type one Poisson count, MAX_ARRIVALS GPU counts and
# MAX_ARRIVALS durations.
N_UNIFORMS = N_TASK_TYPES * (1 + 2 * MAX_ARRIVALS)

class TaskQueue(NamedTuple):
    """Struct-of-arrays task buffer, one entry per slot."""

    gpus: Int[Array, " n_slots"]
    deadline: Int[Array, " n_slots"]
    duration: Int[Array, " n_slots"]
    remaining: Int[Array, " n_slots"]
    task_type: Int[Array, " n_slots"]
    eta: Float[Array, " n_slots"]
    status: Int[Array, " n_slots"]


class Arrivals(NamedTuple):
    """This step's candidate arrivals, training block first: ``2 * MAX_ARRIVALS`` rows."""

    count: Int[Array, "2"]
    gpus: Int[Array, " n_candidates"]
    duration: Int[Array, " n_candidates"]


def empty_queue(n_slots: int = N_TASK_SLOTS) -> TaskQueue:
    zeros = jnp.zeros((n_slots,), jnp.int32)
    return TaskQueue(zeros, zeros, zeros, zeros, zeros, jnp.zeros((n_slots,), jnp.float32), zeros)


def poisson_capped(u: Float[Array, " n"], rate: Float[Array, " n"], cap: int) -> Int[Array, " n"]:
    """``min(Poisson(rate), cap)`` by inverting the CDF at ``u`` (one uniform per draw)."""
    k = jnp.arange(cap, dtype=jnp.float32)
    log_fact = jax.lax.lgamma(k + 1.0)
    # P(N = k) for k < cap; the capped count is the number of CDF levels u exceeds.
    pmf = jnp.exp(k[None, :] * jnp.log(jnp.maximum(rate[:, None], 1e-30)) - rate[:, None] - log_fact[None, :])
    cdf = jnp.cumsum(pmf, axis=1)
    return jnp.sum(u[:, None] > cdf, axis=1).astype(jnp.int32)


def _uniform_int(u: Float[Array, "..."], low: Int[Array, "..."], high: Int[Array, "..."]) -> Int[Array, "..."]:
    """``U{low .. high}`` from uniforms in [0, 1)."""
    span = (high - low + 1).astype(jnp.float32)
    return jnp.minimum(low + jnp.floor(u * span).astype(jnp.int32), high)


def draw_arrivals(
    u: Float[Array, " n_uniforms"],
    mean_interarrival_steps: Float[Array, "2"],
    gpus_min: Int[Array, "2"],
    gpus_max: Int[Array, "2"],
    duration_min: Int[Array, "2"],
    duration_max: Int[Array, "2"],
) -> Arrivals:
    """Arrivals of one step from ``N_UNIFORMS`` uniforms: per type ``min(Poisson(1/interval), 5)``
    tasks with GPUs ``U{gpus_min..gpus_max}`` and duration ``U{duration_min..duration_max}``."""
    u_count = u[:N_TASK_TYPES]
    u_gpus = u[N_TASK_TYPES : N_TASK_TYPES + N_TASK_TYPES * MAX_ARRIVALS].reshape(N_TASK_TYPES, MAX_ARRIVALS)
    u_dur = u[N_TASK_TYPES + N_TASK_TYPES * MAX_ARRIVALS :].reshape(N_TASK_TYPES, MAX_ARRIVALS)
    rate = 1.0 / jnp.maximum(mean_interarrival_steps, 1e-6)
    count = poisson_capped(u_count, rate, MAX_ARRIVALS)
    gpus = _uniform_int(u_gpus, gpus_min[:, None], gpus_max[:, None])
    duration = _uniform_int(u_dur, duration_min[:, None], duration_max[:, None])
    return Arrivals(count, gpus.reshape(-1), duration.reshape(-1))


def insert_arrivals(
    queue: TaskQueue,
    arrivals: Arrivals,
    time_step: IntScalar,
    deadline_slack: Float[Array, "2"],
    eta: Float[Array, "2"],
) -> tuple[TaskQueue, IntScalar, IntScalar]:
    """Put the arrivals, training first, into the lowest free slots as waiting tasks.

    Deadline ``t + int(duration · slack)``. Returns ``(queue, n_inserted, n_dropped)``:
    arrivals that find no free slot are dropped and counted, never lost silently.
    """
    free = queue.status == FREE
    free_rank = jnp.cumsum(free.astype(jnp.int32)) - 1
    n_train, n_ft = arrivals.count[0], arrivals.count[1]
    n_new = n_train + n_ft
    takes = free & (free_rank < n_new)
    # Free slot of rank r receives training arrival r, or fine-tuning arrival r - n_train.
    is_ft = free_rank >= n_train
    src = jnp.where(is_ft, MAX_ARRIVALS + free_rank - n_train, free_rank)
    src = jnp.clip(src, 0, N_TASK_TYPES * MAX_ARRIVALS - 1)
    kind = is_ft.astype(jnp.int32)
    duration = arrivals.duration[src]
    slack = deadline_slack[kind]
    deadline = time_step + (duration.astype(jnp.float32) * slack).astype(jnp.int32)
    new = TaskQueue(
        gpus=arrivals.gpus[src],
        deadline=deadline,
        duration=duration,
        remaining=jnp.zeros_like(duration),
        task_type=kind,
        eta=eta[kind],
        status=jnp.full_like(duration, WAITING),
    )
    queue = jax.tree.map(lambda n, o: jnp.where(takes, n, o), new, queue)
    n_inserted = jnp.sum(takes).astype(jnp.int32)
    return queue, n_inserted, (n_new - n_inserted).astype(jnp.int32)


def precedence(sort_key: Int[Array, " n_slots"]) -> Bool[Array, "n_slots n_slots"]:
    """``before[i, j]`` is True when slot ``j`` comes before slot ``i`` in ascending ``(key, slot)``
    order. A 64 x 64 comparison is cheaper than a sort on CPU and vectorises under ``vmap``."""
    idx = jnp.arange(sort_key.shape[0])
    ki, kj = sort_key[:, None], sort_key[None, :]
    return (kj < ki) | ((kj == ki) & (idx[None, :] < idx[:, None]))


def _admit_prefix(
    before: Bool[Array, "n_slots n_slots"], candidate: Bool[Array, " n_slots"], gpus: Int[Array, " n_slots"], budget: IntScalar
) -> Bool[Array, " n_slots"]:
    """Walk candidates in the order of ``before`` and admit the longest prefix whose GPUs fit
    ``budget``: a candidate is admitted iff the GPUs of all candidates up to and including it fit
    (that running total grows along the order, so the admitted set is a prefix)."""
    demand = jnp.where(candidate, gpus, 0)
    total = jnp.sum(jnp.where(before, demand[None, :], 0), axis=1) + demand
    return candidate & (total <= budget)


def schedule(
    queue: TaskQueue,
    time_step: IntScalar,
    n_gpus: IntScalar,
    gpus_infer: IntScalar,
    train_fraction: Float[Array, ""],
    ft_fraction: Float[Array, ""],
) -> TaskQueue:
    """Earliest-deadline greedy admission (spec §4.7).

    1. urgent waiting tasks (``deadline − t − duration ≤ 0``) by ascending deadline within the
       free GPUs ``n − infer − running``;
    2. waiting training tasks within ``int(train_fraction · avail)``;
    3. waiting fine-tuning tasks within ``int(ft_fraction · avail')`` (avail recomputed);
    stages 2 and 3 in ascending slack ``deadline − t − duration``; ties by slot. Admitted tasks
    start running with ``remaining = duration``.
    """
    waiting = queue.status == WAITING
    slack = queue.deadline - time_step - queue.duration
    urgent = waiting & (slack <= 0)
    by_deadline = precedence(queue.deadline)
    by_slack = precedence(slack)

    def avail(running: Bool[Array, " n_slots"]) -> IntScalar:
        used = jnp.sum(jnp.where(running, queue.gpus, 0))
        return jnp.maximum(n_gpus - gpus_infer - used, 0)

    running = queue.status == RUNNING
    admit = _admit_prefix(by_deadline, urgent, queue.gpus, avail(running))
    running, waiting = running | admit, waiting & ~admit
    for kind, fraction in ((0, train_fraction), (1, ft_fraction)):
        budget = (jnp.clip(fraction, 0.0, 1.0) * avail(running).astype(jnp.float32)).astype(jnp.int32)
        admit = _admit_prefix(by_slack, waiting & (queue.task_type == kind), queue.gpus, budget)
        running, waiting = running | admit, waiting & ~admit
    started = running & (queue.status == WAITING)
    return queue._replace(
        status=jnp.where(running, RUNNING, queue.status),
        remaining=jnp.where(started, queue.duration, queue.remaining),
    )


def advance(queue: TaskQueue, time_step: IntScalar) -> tuple[TaskQueue, IntScalar, IntScalar]:
    """Run one step: running tasks count down and free their slot at 0; waiting tasks with
    ``t ≥ deadline`` expire. Returns ``(queue, n_finished, n_expired)``."""
    running = queue.status == RUNNING
    remaining = jnp.where(running, jnp.maximum(queue.remaining - 1, 0), queue.remaining)
    finished = running & (remaining == 0)
    expired = (queue.status == WAITING) & (time_step >= queue.deadline)
    status = jnp.where(finished | expired, FREE, queue.status)
    queue = queue._replace(remaining=remaining, status=status)
    return queue, jnp.sum(finished).astype(jnp.int32), jnp.sum(expired).astype(jnp.int32)
