"""A standard Gymnasium agent on a PowerZooJax env: Stable-Baselines3 PPO on case-5 economic
dispatch (``TransGrid-case5-dc-v0``, 24 half-hour steps), through the Gymnasium adapter.

The env is a plain ``gymnasium.Env`` here (``make_gymnasium_env``); SB3 vectorises it itself
(``DummyVecEnv``), one jitted env step per SB3 step. The script prints the evaluation return
of uniform-random actions and of the policy before and after a short PPO run, and the
training throughput.

Install (the ``sb3`` extra pulls PyTorch; a CPU wheel is enough)::

    pip install "pzj-rl[sb3,grid]"
    python examples/gymnasium_sb3.py --timesteps 20000
"""

import argparse
import time

import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from powerzoojax.rl.adapters import make_gymnasium_env

ENV_ID = "TransGrid-case5-dc-v0"
MAX_STEPS = 24


def random_return(n_episodes: int, seed: int) -> float:
    env = make_gymnasium_env(ENV_ID, max_steps=MAX_STEPS)
    env.action_space.seed(seed)
    totals = []
    for episode in range(n_episodes):
        env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += reward
            done = terminated or truncated
        totals.append(total)
    return float(np.mean(totals))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=8)
    args = parser.parse_args()

    venv = make_vec_env(lambda: make_gymnasium_env(ENV_ID, max_steps=MAX_STEPS), n_envs=args.n_envs, seed=args.seed)
    eval_env = make_vec_env(lambda: make_gymnasium_env(ENV_ID, max_steps=MAX_STEPS), n_envs=1, seed=args.seed + 1000)
    model = PPO("MlpPolicy", venv, n_steps=256, batch_size=256, n_epochs=5, learning_rate=3e-4, gamma=0.99, seed=args.seed, verbose=0)

    print(f"{ENV_ID}: obs {venv.observation_space.shape}, action {venv.action_space.shape}, {MAX_STEPS} steps per episode")
    print(f"uniform random actions: mean return {random_return(args.eval_episodes, args.seed + 2000):10.2f}")
    before, _ = evaluate_policy(model, eval_env, n_eval_episodes=args.eval_episodes, deterministic=True)
    print(f"PPO before training   : mean return {before:10.2f}")
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    seconds = time.perf_counter() - start
    after, after_std = evaluate_policy(model, eval_env, n_eval_episodes=args.eval_episodes, deterministic=True)
    print(f"PPO after {args.timesteps} steps: mean return {after:10.2f} (std {after_std:.2f})")
    print(f"training: {seconds:.1f} s, {args.timesteps / seconds:,.0f} env-steps/s ({args.n_envs} envs, SB3 DummyVecEnv)")


if __name__ == "__main__":
    main()
