"""RL layer (pzj-rl): wrappers, multi-agent adapters, trainers."""

from powerzoojax.rl._log_wrapper import LogEnvState, LogWrapper

__all__ = ["LogEnvState", "LogWrapper"]
