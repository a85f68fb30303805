"""Single-agent wrappers: they bind `params` and keep the jit / vmap / rollout-kernel
contract. Every layer's step computes one `Transition` (`transition(key, state, action)`,
costs always a `(k,)` vector), and its public `step` is the reference's tuple of it.
`LogWrapper` (5-tuple step, episode statistics), `SafeRLWrapper` (6-tuple
with the selected costs), `SauteWrapper` (remaining budget in the observation),
`RewardWrapper` (a user reward over one of those), `bind` (the one-line choice between
Log and Safe), `PenaltyRewardWrapper` (an `Environment`: costs folded into the reward,
goes inside `LogWrapper`), and the wrappers' conformance kit.

Over any of those (and over each other, see `OuterWrapper`): `NormalizeObservation`
(running or fixed statistics, shared with PPO: `RunningStats`), `ClipObservation`,
`FrameStack`, `ClipAction`, `RescaleAction` (the agent acts in [-1, 1]) and
`TimeLimit` (shorter episodes)."""

from powerzoojax.rl.wrappers._action import ClipAction, RescaleAction
from powerzoojax.rl.wrappers._base import BoundWrapper
from powerzoojax.rl.wrappers._bind import bind
from powerzoojax.rl.wrappers._conformance import check_wrapper_api, check_wrapper_no_retrace
from powerzoojax.rl.wrappers._log import LogEnvState, LogWrapper
from powerzoojax.rl.wrappers._observation import (
    ClipObservation,
    FrameStack,
    FrameStackState,
    NormalizeObservation,
    NormalizeObservationState,
)
from powerzoojax.rl.wrappers._outer import InnerState, OuterWrapper
from powerzoojax.rl.wrappers._penalty import PenaltyRewardWrapper
from powerzoojax.rl.wrappers._reward import RewardEnvState, RewardWrapper
from powerzoojax.rl.wrappers._safe import SafeRLState, SafeRLWrapper
from powerzoojax.rl.wrappers._running_stats import RunningStats, init_stats, normalize, update_stats
from powerzoojax.rl.wrappers._saute import SauteState, SauteWrapper
from powerzoojax.rl.wrappers._time_limit import TimeLimit, TimeLimitState
from powerzoojax.rl.wrappers._transition import AbstractWrapper, Transition

__all__ = [
    "AbstractWrapper", "BoundWrapper", "LogEnvState", "LogWrapper", "PenaltyRewardWrapper", "RewardEnvState", "RewardWrapper",
    "SafeRLState", "SafeRLWrapper", "SauteState", "SauteWrapper", "bind", "check_wrapper_api",
    "check_wrapper_no_retrace", "ClipAction", "ClipObservation", "FrameStack", "FrameStackState", "InnerState",
    "NormalizeObservation", "NormalizeObservationState", "OuterWrapper", "RescaleAction", "RunningStats",
    "TimeLimit", "TimeLimitState", "Transition", "init_stats", "normalize", "update_stats",
]
