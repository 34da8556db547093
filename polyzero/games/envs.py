"""Single-agent environments as one-player OpenSpiel Python games.

Gymnasium's environments (classic control, and Atari through ALE) and MinAtar
enter the games layer as pyspiel games, so every algorithm, driver and
evaluator sees one interface:

* ``gymnasium(env=CartPole-v1,max_steps=0,seed=0)``: any Gymnasium
  environment with a discrete action space and a flat or image observation;
* ``minatar(game=breakout,sticky_action_prob=0.1,difficulty_ramping=true,seed=0)``:
  MinAtar with its package defaults, observations as (C, 10, 10) planes, its
  minimal action set;
* ``atari(game=Breakout,frame_skip=4,sticky_action_prob=0.25,noop_max=30,max_frames=108000,seed=0)``:
  ALE through Gymnasium with the MuZero paper's evaluation protocol (Appendix
  I), grayscale frames downsampled to 96x96.

Every kind takes ``history=H``: the observation is then the last H frames with
the action that led to each as a bias plane (MuZero Appendix E; the paper
uses 32 for Atari; 1, the default, is the current frame alone).

A state is one episode: rewards arrive at every step (intermediate rewards),
the episode ends when the environment terminates or truncates (the episode
cap); ``returns()`` is the undiscounted sum of rewards so far. The start is
random (the environment's reset), so the game is *sampled stochastic*:
MuZero plays it, the real-game search of AlphaZero refuses it, and nothing
that needs to copy a state (cloning a running environment) is offered.
Episode k of a game object resets with seed ``seed + k``, so a run is
reproducible under its seed.
"""

from __future__ import annotations

import numpy as np
import pyspiel

from polyzero.errors import UsageError

_SAMPLED = pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC


def _game_type(short_name: str, long_name: str, params: dict) -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=short_name,
        long_name=long_name,
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=_SAMPLED,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=pyspiel.GameType.RewardModel.REWARDS,
        max_num_players=1,
        min_num_players=1,
        provides_information_state_string=False,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=params,
    )


class _Env:
    """What an environment adapter provides: reset, step, shapes."""

    num_actions: int
    obs_shape: tuple[int, ...]
    max_steps: int

    def reset(self, seed: int) -> np.ndarray: ...

    def step(self, action: int) -> tuple[np.ndarray, float, bool]: ...


class _GymnasiumEnv(_Env):
    def __init__(self, env_id: str, max_steps: int, **make_kwargs):
        try:
            import gymnasium as gym
        except ImportError:
            raise UsageError("Gymnasium environments need gymnasium: pip install gymnasium") from None
        try:
            self.env = gym.make(env_id, **make_kwargs)
        except Exception as exc:  # unknown id, missing extra (box2d, atari, ...)
            raise UsageError(
                f"cannot make Gymnasium environment {env_id!r}: {' '.join(str(exc).split()) or type(exc).__name__}"
            ) from None
        space = self.env.action_space
        if not hasattr(space, "n"):
            raise UsageError(
                f"Gymnasium environment {env_id!r} has a continuous action space; polyzero plays discrete actions only"
            )
        self.num_actions = int(space.n)
        self.obs_shape = tuple(self.env.observation_space.shape)
        cap = self.env.spec.max_episode_steps if self.env.spec else None
        self.max_steps = max_steps or cap or 10_000

    def reset(self, seed: int) -> np.ndarray:
        obs, _ = self.env.reset(seed=seed)
        return np.asarray(obs, np.float32)

    def step(self, action: int):
        obs, reward, terminated, truncated, _ = self.env.step(action)
        return np.asarray(obs, np.float32), float(reward), bool(terminated or truncated)


class _AtariEnv(_GymnasiumEnv):
    """ALE with frame skip, sticky actions, random no-op starts, a frame cap, and
    96x96 grayscale observations in [0, 1]."""

    SIZE = 96

    def __init__(self, game: str, frame_skip: int, sticky: float, noop_max: int, max_frames: int):
        try:
            import ale_py
            import gymnasium as gym
        except ImportError:
            raise UsageError("Atari needs ale-py: pip install ale-py") from None
        gym.register_envs(ale_py)
        super().__init__(
            f"ALE/{game}-v5",
            max_steps=max(1, max_frames // frame_skip),
            frameskip=frame_skip,
            repeat_action_probability=sticky,
            obs_type="grayscale",
            max_episode_steps=max(1, max_frames // frame_skip),
        )
        self.noop_max = noop_max
        self.obs_shape = (1, self.SIZE, self.SIZE)
        self._rng = np.random.default_rng(0)

    def _frame(self, obs) -> np.ndarray:
        h, w = obs.shape
        rows = (np.arange(self.SIZE) * h) // self.SIZE
        cols = (np.arange(self.SIZE) * w) // self.SIZE
        return (obs[rows][:, cols].astype(np.float32) / 255.0)[None]

    def reset(self, seed: int) -> np.ndarray:
        obs, _ = self.env.reset(seed=seed)
        self._rng = np.random.default_rng(seed)
        for _ in range(int(self._rng.integers(0, self.noop_max + 1))):
            obs, _, terminated, truncated, _ = self.env.step(0)
            if terminated or truncated:
                obs, _ = self.env.reset(seed=seed + 1)
        return self._frame(obs)

    def step(self, action: int):
        obs, reward, done = super().step(action)
        return self._frame(obs), reward, done


class _MinAtarEnv(_Env):
    def __init__(self, game: str, sticky: float, ramping: bool, max_steps: int):
        try:
            from minatar import Environment
        except ImportError:
            raise UsageError("MinAtar games need minatar: pip install minatar") from None
        try:
            self.env = Environment(game, sticky_action_prob=sticky, difficulty_ramping=ramping)
        except Exception:
            raise UsageError(
                f"unknown MinAtar game {game!r}; MinAtar has asterix, breakout, freeway, seaquest, space_invaders"
            ) from None
        self.actions = list(self.env.minimal_action_set())
        self.num_actions = len(self.actions)
        h, w, c = self.env.state_shape()
        self.obs_shape = (c, h, w)
        self.max_steps = max_steps or 100_000

    def _obs(self) -> np.ndarray:
        return np.ascontiguousarray(np.transpose(self.env.state(), (2, 0, 1)), np.float32)

    def reset(self, seed: int) -> np.ndarray:
        self.env.seed(seed)
        self.env.reset()
        return self._obs()

    def step(self, action: int):
        reward, terminal = self.env.act(self.actions[action])
        return self._obs(), float(reward), bool(terminal)


class _History(_Env):
    """MuZero Appendix E: the last `length` observations, each with the action that led
    to it as a bias plane (a + 1) / A (0: none, before the episode's start), stacked
    along the first axis (flat observations: the vectors and the scaled actions)."""

    def __init__(self, env: _Env, length: int):
        self.env = env
        self.length = length
        self.num_actions = env.num_actions
        self.max_steps = env.max_steps
        shape = env.obs_shape
        if len(shape) == 3:
            c, h, w = shape
            self.obs_shape = (length * (c + 1), h, w)
        else:
            self.obs_shape = (length * (int(np.prod(shape)) + 1),)
        self._image = len(shape) == 3

    def _stack(self) -> np.ndarray:
        scaled = np.asarray(self._actions, np.float32) / self.num_actions
        if self._image:
            h, w = self._frames[0].shape[1:]
            planes = np.broadcast_to(scaled[:, None, None, None], (self.length, 1, h, w))
            return np.concatenate([np.concatenate(self._frames), planes.reshape(self.length, h, w)])
        return np.concatenate([np.concatenate([f.ravel() for f in self._frames]), scaled])

    def reset(self, seed: int) -> np.ndarray:
        obs = self.env.reset(seed)
        self._frames = [np.zeros_like(obs)] * (self.length - 1) + [obs]
        self._actions = [0] * self.length
        return self._stack()

    def step(self, action: int):
        obs, reward, done = self.env.step(action)
        self._frames = self._frames[1:] + [obs]
        self._actions = self._actions[1:] + [action + 1]
        return self._stack(), reward, done


def _with_history(env: _Env, length: int) -> _Env:
    if length < 1:
        raise UsageError(f"history must be at least 1, not {length}")
    return env if length == 1 else _History(env, length)


class EnvGame(pyspiel.Game):
    """A one-player game whose episodes are an environment's."""

    def __init__(self, game_type: pyspiel.GameType, params: dict, make_env):
        self._make_env = make_env
        probe = make_env()
        self.num_actions = probe.num_actions
        self.obs_shape = probe.obs_shape
        self.max_steps = probe.max_steps
        self.seed = int(params.get("seed", 0))
        self.episodes = 0
        info = pyspiel.GameInfo(
            num_distinct_actions=probe.num_actions,
            max_chance_outcomes=0,
            num_players=1,
            min_utility=-1e9,
            max_utility=1e9,
            utility_sum=None,
            max_game_length=probe.max_steps,
        )
        super().__init__(game_type, info, params)
        self._spare = probe  # the next episode reuses the probe's environment

    def new_initial_state(self):
        env, self._spare = (self._spare or self._make_env()), None
        seed = self.seed + self.episodes
        self.episodes += 1
        return EnvState(self, env, seed)

    def observation_tensor_shape(self):
        return list(self.obs_shape)

    def make_py_observer(self, iig_obs_type=None, params=None):
        return _EnvObserver(self.obs_shape)


class EnvState(pyspiel.State):
    def __init__(self, game: EnvGame, env: _Env, seed: int):
        super().__init__(game)
        self._env = env
        self._obs = env.reset(seed)
        self._return = 0.0
        self._reward = 0.0
        self._done = False
        self._steps = 0
        self._max_steps = game.max_steps
        self._num_actions = game.num_actions

    def current_player(self):
        return pyspiel.PlayerId.TERMINAL if self._done else 0

    def _legal_actions(self, player):
        return list(range(self._num_actions))

    def _apply_action(self, action):
        self._obs, self._reward, done = self._env.step(int(action))
        self._return += self._reward
        self._steps += 1
        self._done = done or self._steps >= self._max_steps

    def _action_to_string(self, player, action):
        return f"action {action}"

    def is_terminal(self):
        return self._done

    def rewards(self):
        return [self._reward]

    def returns(self):
        return [self._return]

    def observation_tensor(self, player=0):
        return self._obs.ravel().tolist()

    def __str__(self):
        return f"step {self._steps}, return {self._return:g}"


class _EnvObserver:
    def __init__(self, shape):
        self.tensor = np.zeros(int(np.prod(shape)), np.float32)
        self.dict = {"observation": self.tensor.reshape(shape)}

    def set_from(self, state, player):
        self.tensor[:] = state._obs.ravel()

    def string_from(self, state, player):
        return str(state)


# ---------------------------------------------------------------- registration
_GYM_PARAMS = {"env": "CartPole-v1", "max_steps": 0, "history": 1, "seed": 0}
_MINATAR_PARAMS = {
    "game": "breakout",
    "sticky_action_prob": 0.1,
    "difficulty_ramping": True,
    "max_steps": 0,
    "history": 1,
    "seed": 0,
}
_ATARI_PARAMS = {
    "game": "Breakout",
    "frame_skip": 4,
    "sticky_action_prob": 0.25,
    "noop_max": 30,
    "max_frames": 108_000,
    "history": 1,
    "seed": 0,
}

_GYM_TYPE = _game_type("gymnasium", "Gymnasium environment", _GYM_PARAMS)
_MINATAR_TYPE = _game_type("minatar", "MinAtar", _MINATAR_PARAMS)
_ATARI_TYPE = _game_type("atari", "Atari 2600 through ALE", _ATARI_PARAMS)


class GymnasiumGame(EnvGame):
    def __init__(self, params=None):
        p = {**_GYM_PARAMS, **(params or {})}
        super().__init__(
            _GYM_TYPE, p, lambda: _with_history(_GymnasiumEnv(p["env"], int(p["max_steps"])), int(p["history"]))
        )


class MinAtarGame(EnvGame):
    def __init__(self, params=None):
        p = {**_MINATAR_PARAMS, **(params or {})}
        super().__init__(
            _MINATAR_TYPE,
            p,
            lambda: _with_history(
                _MinAtarEnv(
                    p["game"], float(p["sticky_action_prob"]), bool(p["difficulty_ramping"]), int(p["max_steps"])
                ),
                int(p["history"]),
            ),
        )


class AtariGame(EnvGame):
    def __init__(self, params=None):
        p = {**_ATARI_PARAMS, **(params or {})}
        super().__init__(
            _ATARI_TYPE,
            p,
            lambda: _with_history(
                _AtariEnv(
                    p["game"],
                    int(p["frame_skip"]),
                    float(p["sticky_action_prob"]),
                    int(p["noop_max"]),
                    int(p["max_frames"]),
                ),
                int(p["history"]),
            ),
        )


pyspiel.register_game(_GYM_TYPE, GymnasiumGame)
pyspiel.register_game(_MINATAR_TYPE, MinAtarGame)
pyspiel.register_game(_ATARI_TYPE, AtariGame)
