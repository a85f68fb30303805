"""Multi-agent adapters (params bound, dict and stacked APIs): the contract
`MultiAgentEnvironment` / `MARLState`, `GridMARLEnv` (units and bundle devices of a
`TransGridEnv` as agents), `DistGridMARLEnv` / `make_ders_marl_env` (DERs and bundle
devices of a `DistGridEnv`; global or K-hop local observations; `DistGrid3PhaseMARLEnv`
for the three-phase feeder) and `MarketMARLEnv`
(GenCos offering into the SCED). The grid and market envs are imported lazily, so this
package needs only core."""

from powerzoojax.rl.marl._dist_grid import DistGridMARLEnv, make_ders_marl_env
from powerzoojax.rl.marl._dist_grid_3phase import DistGrid3PhaseMARLEnv
from powerzoojax.rl.marl._grid import GridMARLEnv
from powerzoojax.rl.marl._market import MarketMARLEnv
from powerzoojax.rl.marl._multi_agent import MARLState, MultiAgentEnvironment

__all__ = ["DistGrid3PhaseMARLEnv", "DistGridMARLEnv", "GridMARLEnv", "MARLState", "MarketMARLEnv", "MultiAgentEnvironment", "make_ders_marl_env"]
