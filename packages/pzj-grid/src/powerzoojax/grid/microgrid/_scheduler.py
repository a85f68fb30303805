"""GPU task queue of the data-centre model: Poisson arrivals into a fixed
64-slot masked buffer and the earliest-deadline greedy scheduler.

Every function is pure, fixed-shape and branch-free, so the queue runs unchanged under
`jit`/`vmap`/`scan`. Slot order carries no meaning: a task is identified by its slot
for as long as it lives there.

Status codes: 0 free, 1 waiting, 2 running. Task types: 0 training, 1 fine-tuning.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.core._types import IntScalar
from powerzoojax.physics._pin import store_once

N_TASK_SLOTS = 64
# At most this many arrivals per task type per step (the reference: min(Poisson, 5)).
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
    """This step's candidate arrivals, training block first: `2 * MAX_ARRIVALS` rows."""

    count: Int[Array, "2"]
    gpus: Int[Array, " n_candidates"]
    duration: Int[Array, " n_candidates"]


def empty_queue(n_slots: int = N_TASK_SLOTS) -> TaskQueue:
    zeros = jnp.zeros((n_slots,), jnp.int32)
    return TaskQueue(zeros, zeros, zeros, zeros, zeros, jnp.zeros((n_slots,), jnp.float32), zeros)


def poisson_capped(u: Float[Array, " n"], rate: Float[Array, " n"], cap: int) -> Int[Array, " n"]:
    """`min(Poisson(rate), cap)` by inverting the CDF at `u` (one uniform per draw)."""
    k = jnp.arange(cap, dtype=jnp.float32)
    log_fact = jax.lax.lgamma(k + 1.0)
    # P(N = k) for k < cap; the capped count is the number of CDF levels u exceeds.
    pmf = jnp.exp(k[None, :] * jnp.log(jnp.maximum(rate[:, None], 1e-30)) - rate[:, None] - log_fact[None, :])
    cdf = jnp.cumsum(pmf, axis=1)
    return jnp.sum(u[:, None] > cdf, axis=1).astype(jnp.int32)


def _uniform_int(u: Float[Array, "..."], low: Int[Array, "..."], high: Int[Array, "..."]) -> Int[Array, "..."]:
    """`U{low .. high}` from uniforms in [0, 1)."""
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
    """Arrivals of one step from `N_UNIFORMS` uniforms: per type `min(Poisson(1/interval), 5)`
    tasks with GPUs `U{gpus_min..gpus_max}` and duration `U{duration_min..duration_max}`."""
    u_count = u[:N_TASK_TYPES]
    u_gpus = u[N_TASK_TYPES : N_TASK_TYPES + N_TASK_TYPES * MAX_ARRIVALS].reshape(N_TASK_TYPES, MAX_ARRIVALS)
    u_dur = u[N_TASK_TYPES + N_TASK_TYPES * MAX_ARRIVALS :].reshape(N_TASK_TYPES, MAX_ARRIVALS)
    rate = 1.0 / jnp.maximum(mean_interarrival_steps, 1e-6)
    count = poisson_capped(u_count, rate, MAX_ARRIVALS)
    gpus = _uniform_int(u_gpus, gpus_min[:, None], gpus_max[:, None])
    duration = _uniform_int(u_dur, duration_min[:, None], duration_max[:, None])
    return Arrivals(count, gpus.reshape(-1), duration.reshape(-1))


# A reduction over a wide axis becomes kernels of its own on a CPU (XLA's tree-reduction
# pass; `benchmarks/results/dcmg.md`). Halving the slot axis elementwise down to 16 first
# keeps the reduction one kernel fused with its producer. For integers only, where any
# order is exact.
_REDUCE_WIDTH = 16


def _fold(x: Int[Array, "*batch n"], op: Callable[[Array, Array], Array]) -> Int[Array, "*batch m"]:
    while x.shape[-1] > _REDUCE_WIDTH and x.shape[-1] % 2 == 0:
        h = x.shape[-1] // 2
        x = op(x[..., :h], x[..., h:])
    return x


def slot_sum(x: Int[Array, "*batch n"]) -> Int[Array, "*batch"]:
    """Integer sum over the last (slot) axis."""
    return jnp.sum(_fold(x, jnp.add), axis=-1)


def slot_max(x: Int[Array, "*batch n"]) -> Int[Array, "*batch"]:
    """Integer maximum over the last (slot) axis."""
    return jnp.max(_fold(x, jnp.maximum), axis=-1)


# Prefix sums are float32 products with constant 0/1 triangular matrices, in blocks of
# `_CUM_BLOCK`: a product inside each block, then the block totals' exclusive prefix (a
# second, tiny product) added back: one 64 × 64 product per env is 4,096 multiply-adds,
# blocks of 8 need 576. The log-depth `associative_scan` (on CPU `jnp.cumsum` is a
# quadratic `reduce_window`) is many small kernels; integer add chains inside the
# blocks are copied into every consumer fusion.
# Exact while every partial sum stays below 2**24: the summands are 0/1 flags or task GPU
# counts over at most `N_TASK_SLOTS` slots, and `make_datacenter_params` keeps
# `task_gpus_max <= MAX_TASK_GPUS`. `HIGHEST` keeps accelerators from rounding the
# operands to bf16/tf32.
_CUM_BLOCK = 8
MAX_TASK_GPUS = (1 << 24) // N_TASK_SLOTS - 1
# Longest task [steps] the arrival table stores exactly (`store_once`, a float32 division).
MAX_TASK_DURATION = (1 << 24) - 1


def _cumsum(x: Int[Array, " n"]) -> Int[Array, " n"]:
    """Inclusive prefix sum of non-negative integers whose total is below `2**24`."""
    n = x.shape[-1]
    b = _CUM_BLOCK if n % _CUM_BLOCK == 0 else n

    def dot(a: Array, m: np.ndarray) -> Array:
        return jnp.dot(a, jnp.asarray(m, jnp.float32), precision=jax.lax.Precision.HIGHEST)

    inner = dot(x.astype(jnp.float32).reshape(n // b, b), np.triu(np.ones((b, b))))
    before = dot(inner[:, -1], np.triu(np.ones((n // b, n // b)), 1))
    return (inner + before[:, None]).reshape(n).astype(jnp.int32)


def insert_arrivals(
    queue: TaskQueue,
    arrivals: Arrivals,
    time_step: IntScalar,
    deadline_slack: Float[Array, "2"],
    eta: Float[Array, "2"],
) -> tuple[TaskQueue, IntScalar, IntScalar]:
    """Put the arrivals, training first, into the lowest free slots as waiting tasks.

    Deadline `t + int(duration · slack)`. Returns `(queue, n_inserted, n_dropped)`:
    arrivals that find no free slot are dropped and counted, never lost silently.
    """
    free = queue.status == FREE
    free_rank = _cumsum(free.astype(jnp.int32)) - 1
    n_train, n_ft = arrivals.count[0], arrivals.count[1]
    n_new = n_train + n_ft
    takes = free & (free_rank < n_new)
    # Free slot of rank r receives training arrival r, or fine-tuning arrival r - n_train.
    src = jnp.where(free_rank >= n_train, MAX_ARRIVALS + free_rank - n_train, free_rank)
    src = jnp.clip(src, 0, N_TASK_TYPES * MAX_ARRIVALS - 1)
    # Which arrival each slot takes (−1: none), stored once: each of the seven queue fields
    # below, the scheduler's keys and the end-of-step code read it, and each would
    # otherwise recompute the rank chain.
    code = store_once(jnp.where(takes, src, -1), src)
    takes = code >= 0
    src = jnp.maximum(code, 0)
    is_ft = src >= MAX_ARRIVALS
    slack = jnp.where(is_ft, deadline_slack[1], deadline_slack[0])
    # The candidate table is stored once per env: a per-slot consumer of the fused
    # expression (uniform → floor → clip) re-evaluates it for every slot, 64 per env
    # Exact: `make_datacenter_params` keeps GPU counts and
    # durations at most `MAX_TASK_DURATION < 2**24`.
    table = jnp.concatenate([arrivals.gpus, arrivals.duration])
    table = store_once(table, table)
    # A select per candidate rather than a gather: a batched gather is a scalar loop over
    # (env, slot) pairs on a CPU, the ten selects vectorise (`benchmarks/results/dcmg.md`).
    # Stored once, or every consumer fusion would redo the chain.
    n_cand = N_TASK_TYPES * MAX_ARRIVALS
    new_gpus, duration = table[0], table[n_cand]
    for r in range(1, n_cand):
        new_gpus = jnp.where(src == r, table[r], new_gpus)
        duration = jnp.where(src == r, table[n_cand + r], duration)
    new_gpus, duration = store_once(new_gpus, src), store_once(duration, src)
    queue = TaskQueue(
        gpus=jnp.where(takes, new_gpus, queue.gpus),
        deadline=jnp.where(takes, time_step + (duration.astype(jnp.float32) * slack).astype(jnp.int32), queue.deadline),
        duration=jnp.where(takes, duration, queue.duration),
        remaining=jnp.where(takes, 0, queue.remaining),
        task_type=jnp.where(takes, is_ft.astype(jnp.int32), queue.task_type),
        eta=jnp.where(takes, jnp.where(is_ft, eta[1], eta[0]), queue.eta),
        status=jnp.where(takes, WAITING, queue.status),
    )
    n_inserted = slot_sum(takes.astype(jnp.int32))
    return queue, n_inserted, (n_new - n_inserted).astype(jnp.int32)


# Sort keys pack `(stage bit, key − t, slot)` into one int32, so a single-operand integer
# sort (fast on CPU, unlike a multi-operand or comparator sort) orders the slots exactly by
# `(key, slot)`. Exact while `|key − t| < KEY_SPAN`; `make_datacenter_params` keeps
# every waiting task's deadline and slack inside that span.
KEY_SPAN = 1 << 22
_SLOT_BITS = 6
_STAGE_BIT = 1 << (23 + _SLOT_BITS)
_NOT_CANDIDATE = jnp.iinfo(jnp.int32).max


def _pack(
    rel_key: Int[Array, " n_slots"], candidate: Bool[Array, " n_slots"], stage: Int[Array, " n_slots"]
) -> Int[Array, " n_slots"]:
    slot = jnp.arange(rel_key.shape[0], dtype=jnp.int32)
    rel = jnp.clip(rel_key, -KEY_SPAN, KEY_SPAN - 1) + KEY_SPAN
    return jnp.where(candidate, stage * _STAGE_BIT + (rel << _SLOT_BITS) + slot, _NOT_CANDIDATE)


def _sorted_demand(
    packed: Int[Array, " n_slots"], demand: Int[Array, " n_slots"]
) -> tuple[Int[Array, " n_slots"], Int[Array, " n_slots"]]:
    """Packed keys in ascending order and the demand of the slot at each sorted position."""
    # Unstable: the packed keys of candidates are distinct (the slot is part of the key) and
    # the non-candidates are all equal, so any order is the stable one, and an unstable
    # sort does less work.
    keys = jax.lax.sort(packed, is_stable=False)
    slot = keys & ((1 << _SLOT_BITS) - 1)
    sorted_demand = jnp.where(keys == _NOT_CANDIDATE, 0, jnp.take_along_axis(demand, slot, axis=0))
    return keys, sorted_demand


def _admitted_prefix(
    keys: Int[Array, " n_slots"],
    cum: Int[Array, " n_slots"],
    budget: IntScalar,
    eligible: Bool[Array, " n_slots"],
    fold: bool = True,
) -> tuple[IntScalar, IntScalar]:
    """`(cutoff, gpus)` of one greedy stage over sorted candidates: the largest eligible
    sorted key whose running total fits `budget` (−1 if none) and that running total (0
    if none). The running total grows along the order, so the candidates with a key up to
    the cutoff are exactly the admitted prefix and their GPUs sum to its running total."""
    fits = eligible & (cum <= budget)
    # `fold=False` for the fine-tuning stage: there XLA splits the fused, folded reductions
    # over the CPU's thread pool, which costs more than the two kernels the fold saves.
    if not fold:
        return jnp.max(jnp.where(fits, keys, -1)), jnp.max(jnp.where(fits, cum, 0))
    return slot_max(jnp.where(fits, keys, -1)), slot_max(jnp.where(fits, cum, 0))


def schedule(
    queue: TaskQueue,
    time_step: IntScalar,
    n_gpus: IntScalar,
    gpus_infer: IntScalar,
    train_fraction: Float[Array, ""],
    ft_fraction: Float[Array, ""],
) -> TaskQueue:
    """Earliest-deadline greedy admission.

    1. urgent waiting tasks (`deadline − t − duration ≤ 0`) by ascending deadline within the
       free GPUs `n − infer − running`;
    2. waiting training tasks within `int(train_fraction · avail)`;
    3. waiting fine-tuning tasks within `int(ft_fraction · avail')` (avail recomputed);
    stages 2 and 3 in ascending slack `deadline − t − duration`; ties by slot. Admitted tasks
    start running with `remaining = duration`. Each stage admits the longest prefix of its
    order whose GPUs fit the budget. See `schedule_with_load`.
    """
    return schedule_with_load(queue, time_step, n_gpus, gpus_infer, train_fraction, ft_fraction)[0]


def schedule_with_load(
    queue: TaskQueue,
    time_step: IntScalar,
    n_gpus: IntScalar,
    gpus_infer: IntScalar,
    train_fraction: Float[Array, ""],
    ft_fraction: Float[Array, ""],
    running_gpus: IntScalar | None = None,
) -> tuple[TaskQueue, IntScalar]:
    """`schedule`, also returning the GPUs of all running tasks afterwards.

    `running_gpus` (optional) is the GPUs of the tasks already running in `queue`; the
    data centre passes the sum over its state before the arrival insert (arrivals only fill
    free slots, so the running set is the same), which XLA then computes from the carried
    state instead of through the insert.

    Two integer sorts per step: one by deadline for stage 1, one by `(type, slack)` that
    serves stages 2 and 3 (training keys sort before fine-tuning keys; stage 2 admits only
    training tasks, so the fine-tuning candidates are the same before and after it). Every
    per-stage total (the GPUs admitted, the training demand) is read off the sorted running
    sums, so the only slot-space passes are the two key packs and the final admission mask.
    """
    waiting = queue.status == WAITING
    slack = queue.deadline - time_step - queue.duration
    urgent = waiting & (slack <= 0)
    free_gpus = n_gpus - gpus_infer
    if running_gpus is None:
        running_gpus = slot_sum(jnp.where(queue.status == RUNNING, queue.gpus, 0))

    def stored(b: IntScalar) -> IntScalar:
        # A stage budget is stored once per env: otherwise its scalar chain (action,
        # inference profile, running sums) is recomputed for every slot of the broadcasting
        # consumer. Split in 12-bit halves so that `store_once` is exact for any int32.
        return (store_once(b >> 12, time_step) << 12) | store_once(b & 4095, time_step)

    def budget(fraction: Float[Array, ""], used_gpus: IntScalar) -> IntScalar:
        avail = jnp.maximum(free_gpus - used_gpus, 0)
        return stored((jnp.clip(fraction, 0.0, 1.0) * avail.astype(jnp.float32)).astype(jnp.int32))

    zero = jnp.zeros_like(queue.gpus)
    by_deadline = _pack(queue.deadline - time_step, urgent, zero)
    keys, demand = _sorted_demand(by_deadline, queue.gpus)
    urgent_cut, urgent_gpus = _admitted_prefix(
        keys, _cumsum(demand), stored(jnp.maximum(free_gpus - running_gpus, 0)), keys != _NOT_CANDIDATE
    )
    used = running_gpus + urgent_gpus
    admit_urgent = urgent & (by_deadline <= urgent_cut)
    waiting = waiting & ~admit_urgent

    by_slack = _pack(slack, waiting, queue.task_type)
    keys, demand = _sorted_demand(by_slack, queue.gpus)
    is_ft = keys >= _STAGE_BIT  # non-candidates too; they are excluded below
    cum = _cumsum(demand)
    train_cut, train_gpus = _admitted_prefix(keys, cum, budget(train_fraction, used), ~is_ft)
    used = used + train_gpus
    # Training keys come first, so the training demand is the running total at the last one.
    cum_ft = cum - slot_max(jnp.where(is_ft, 0, cum))
    ft_cut, ft_gpus = _admitted_prefix(
        keys, cum_ft, budget(ft_fraction, used), is_ft & (keys != _NOT_CANDIDATE), fold=False
    )
    # A training cutoff is below _STAGE_BIT, so it admits no fine-tuning key; the
    # fine-tuning cutoff would admit every training key, hence the lower bound.
    admit_rest = waiting & ((by_slack <= train_cut) | ((by_slack >= _STAGE_BIT) & (by_slack <= ft_cut)))
    started = admit_urgent | admit_rest
    queue = queue._replace(
        status=jnp.where(started, RUNNING, queue.status),
        remaining=jnp.where(started, queue.duration, queue.remaining),
    )
    return queue, used + ft_gpus


def advance(queue: TaskQueue, time_step: IntScalar) -> tuple[TaskQueue, IntScalar, IntScalar]:
    """Run one step: running tasks count down and free their slot at 0; waiting tasks with
    `t ≥ deadline` expire. Returns `(queue, n_finished, n_expired)`."""
    running = queue.status == RUNNING
    remaining = jnp.where(running, jnp.maximum(queue.remaining - 1, 0), queue.remaining)
    finished = running & (remaining == 0)
    expired = (queue.status == WAITING) & (time_step >= queue.deadline)
    # The status after scheduling and this step's two events, packed into one small integer
    # and stored once: the state update, the counters, the task power and the observation
    # all read it, and each would otherwise recompute the insert → schedule chain. Exact for
    # status codes below 2**21 in magnitude (they are 0, 1, 2).
    code = store_once(4 * queue.status + finished.astype(jnp.int32) + 2 * expired.astype(jnp.int32), queue.task_type)
    finished = (code & 1) != 0
    expired = (code & 2) != 0
    status = jnp.where(finished | expired, FREE, code >> 2)
    queue = queue._replace(remaining=remaining, status=status)
    return queue, slot_sum(finished.astype(jnp.int32)), slot_sum(expired.astype(jnp.int32))
