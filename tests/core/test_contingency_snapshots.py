"""The contingency screen of several operating points at once: `contingency_screen` with
`(K, ...)` loads and set-points gives, snapshot by snapshot, the screen of each operating
point alone (same convergence verdicts and iteration counts, voltages and flows to float32
round-off), for the fast-decoupled loop alone, with its Newton fallback, with chunked
batches and with Newton throughout, and with an input given once (1-D) for every snapshot."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.case import load_case
from powerzoojax.physics import contingency_screen, make_ac_outage_model, single_line_outages

# Load (and generation) scales of the snapshots: light, nominal, heavy.
SCALES = (0.9, 1.0, 1.08)


@functools.cache
def _setup():
    case = load_case("118", source="matpower")
    model = make_ac_outage_model(case)
    outages = jnp.asarray(single_line_outages(case)[::9])
    pg = jnp.asarray(case.unit_pg, jnp.float32) * (jnp.asarray(case.unit_status) > 0).astype(jnp.float32)
    pd, qd = jnp.asarray(case.node_pd, jnp.float32), jnp.asarray(case.node_qd, jnp.float32)
    scale = jnp.asarray(SCALES, jnp.float32)[:, None]
    return model, outages, pg[None, :] * scale, pd[None, :] * scale, qd[None, :] * scale


@functools.cache
def _screen(method: str, batch_size: int | None = None):
    """The screen of the case's outage sets by `method`, one jitted function of the operating
    point, shared by every check of the method (the single-snapshot program is built once)."""
    model, outages = _setup()[:2]
    return jax.jit(
        lambda pg, pd, qd: contingency_screen(model, pg, None, pd, qd, outages, method=method, batch_size=batch_size)
    )


@pytest.mark.parametrize(
    "method,batch_size,shared_load_q",
    [
        ("fdlf_only", None, False),
        # Slow: its fallback re-solves nothing here (every set converges in the fast-decoupled
        # loop); the fdlf_only and newton cases cover its two halves.
        pytest.param("fdlf", None, False, marks=pytest.mark.slow),
        # Chunks of 7 (snapshot, set) pairs, and the reactive load given once (1-D) for every
        # snapshot: a 1-D input is broadcast over the snapshots.
        ("fdlf_only", 7, True),
        ("newton", None, True),
    ],
)
def test_snapshot_batch_matches_one_call_per_snapshot(
    method: str, batch_size: int | None, shared_load_q: bool
) -> None:
    """Each snapshot of the batch equals the unchunked screen of that operating point alone
    (so chunking the batch changes nothing either)."""
    model, outages, pg, pd, qd = _setup()
    # The shared reactive load is the nominal snapshot's.
    q_together = qd[1] if shared_load_q else qd
    together = _screen(method, batch_size)(pg, pd, q_together)
    k, c = len(SCALES), outages.shape[0]
    assert together.vm.shape == (k, c, model.network.n_nodes)
    assert together.converged.shape == (k, c) and together.outages.shape == (k, *outages.shape)
    assert together.base.vm.shape == (k, model.network.n_nodes)
    for s in range(k):
        alone = _screen(method)(pg[s], pd[s], q_together if shared_load_q else qd[s])
        np.testing.assert_array_equal(np.asarray(together.converged[s]), np.asarray(alone.converged))
        np.testing.assert_array_equal(np.asarray(together.n_iter[s]), np.asarray(alone.n_iter))
        np.testing.assert_allclose(np.asarray(together.base.vm[s]), np.asarray(alone.base.vm), atol=1e-6)
        np.testing.assert_allclose(np.asarray(together.vm[s]), np.asarray(alone.vm), atol=1e-5)
        np.testing.assert_allclose(np.asarray(together.va[s]), np.asarray(alone.va), atol=1e-5)
        np.testing.assert_allclose(
            np.asarray(together.line_loading_mva[s]), np.asarray(alone.line_loading_mva), atol=1e-2
        )
        np.testing.assert_array_equal(np.asarray(together.n_overloads[s]), np.asarray(alone.n_overloads))
    # The snapshots differ: the screen is not one operating point repeated.
    assert not np.allclose(np.asarray(together.vm[0]), np.asarray(together.vm[-1]), atol=1e-4)
    assert np.all(np.asarray(together.converged))


def test_snapshot_counts_must_agree() -> None:
    model, outages, pg, pd, qd = _setup()
    with pytest.raises(ValueError, match="snapshot count"):
        contingency_screen(model, pg, None, pd[:2], qd, outages)
