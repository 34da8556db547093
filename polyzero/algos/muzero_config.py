"""MuZero's config section `[muzero]` (its own plug-in section, registered on the run
config through `polyzero.plugins.CONFIG_SECTIONS`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ConfigSection
from ..errors import UsageError
from ..games.loader import registered_type
from ..validation import choice as _choice, fraction as _fraction, positive as _positive


@dataclass
class MuZeroConfig:
    """MuZero's learned model and targets; defaults from the MuZero paper's appendices."""

    unroll_steps: int = 5  # K (Appendix G)
    td_steps: int = 10  # n of the n-step value target, single-agent (Appendix G; 5 with Reanalyze)
    discount: float = 0.997  # gamma, single-agent (Appendix C); board games use 1
    hidden_size: int = 64  # mlp models: size of the hidden state
    scale_hidden: bool = True  # min-max scale hidden states to [0, 1] (Appendix G)
    zero_init_heads: bool = False  # value and reward heads start at 0 (not in the paper)
    support: int = 300  # categorical value/reward support -S..S, single-agent (Appendix F)
    value_loss_weight: float = 1.0  # 0.25 with Reanalyze (Appendix H)
    gradient_scaling: bool = True  # 1/K on unrolled steps, 1/2 into the dynamics (Appendix G)
    prioritized: str = "auto"  # auto: prioritized for single-agent, uniform for board games
    priority_alpha: float = 1.0  # alpha = beta = 1 (Appendix G)
    priority_beta: float = 1.0
    # p_i = |nu_i - z_i| with nu the value of the acting search at sample i (Appendix G);
    # "network": the prediction function's value of the sample when it is trained instead.
    priority_value: str = "search"
    temperature_schedule: bool = True  # single-agent acting temperature 1, 0.5, 0.25 (Appendix D)
    reanalyse_fraction: float = 0.0  # share of samples whose policy targets are re-searched (0.8, Appendix H)
    target_update_every: int = 100  # training steps between target-network refreshes (Reanalyze)
    # Reanalyze searches with the latest parameters (Appendix H) or the target network
    reanalyse_network: str = "latest"
    # What Reanalyze refreshes: "both" (Appendix H), or only the "policy" targets or the
    # "value" bootstraps, to tell their effects apart.
    reanalyse_targets: str = "both"
    # c_scale of the reanalysis searches alone (Gumbel root, sigma of the Gumbel paper's
    # Eq. 8); 0: the search's own `search.c_scale`. A smaller one keeps a re-searched
    # target from moving the logits it came from by sigma's whole range at every step.
    reanalyse_c_scale: float = 0.0
    # The n-step bootstrap v-_{t+n}: the target network's prediction f-(h-(o)) ("network",
    # Appendix H), or the root value of a search with the target network ("search", as
    # EfficientZero reanalyses values), which values the searched, improved policy.
    reanalyse_bootstrap: str = "network"
    chunk_length: int = 200  # single-agent episodes enter replay every 200 moves (Appendix D); 0: whole
    downsample: str = "auto"  # Appendix F's stack for image inputs; auto: frames of 32 x 32 or more
    # Normalisation inside g and in f's heads at unrolled steps k >= 1 (resnet models):
    # "batch" (the paper's batch norm) or "layer" (per sample, the same in training and search).
    unroll_norm: str = "batch"
    # The plane each action gives the resnet dynamics (Appendix E): "game" where the games
    # layer knows where actions act (Connect Four: the column), "cell" a one at the
    # action's flat cell index (what runs saved before 2026-11-25 used).
    action_planes: str = "game"
    # Weight of EfficientZero's temporal consistency loss (Ye et al. 2021; 2 there): the
    # dynamics' state s^k is pulled towards h(o_{t+k}) through SimSiam heads. Not in the
    # MuZero paper; 0 (its default) leaves it out.
    consistency_weight: float = 0.0
    # Board games, with the consistency loss: the target at the step after a finished
    # game's last move is h of the final position (kept with the game), where there is
    # none otherwise -- the one transition whose result the final outcome decides.
    consistency_terminal: bool = False
    # Board games: the final outcome as the last move's reward, learned by a reward head,
    # with value 0 past the end (the published pseudocode's treatment), instead of no
    # reward loss (Appendix G) and the side to move past the end having lost.
    terminal_reward: bool = False
    # Board games: h and f also learn a finished game's final position (kept with the game,
    # seen by the side that would move next) with the value the unroll gives the step after
    # the last move (the loser's -1, 0 after a draw), at the weight of one unrolled step.
    # Not in the MuZero paper.
    terminal_value: bool = False
    # The dynamics function's size, a lever on the learner's speed (a K-step unroll runs g
    # K times): residual blocks of g's tower (resnet) or hidden layers (mlp); -1: the same
    # as h's (net.blocks or net.layers), as in the paper (Appendix F).
    dynamics_blocks: int = -1
    # EfficientZero's value prefix (Ye et al. 2021, Section 4.2; single-agent games): g's
    # reward head is an LSTM predicting the discounted reward sum since its last reset,
    # every value_prefix_horizon steps; the search's edge reward is the sum's increment.
    value_prefix: bool = False
    value_prefix_horizon: int = 5  # H, the LSTM's reset period (5 in the paper)
    # EfficientZero's off-policy correction (Section 4.3; single-agent games): the n-step
    # horizon shrinks with a sample's age, one step per off_policy_age_ratio * train.steps
    # learning steps (0.3, the authors' code), down to 1, and the bootstrap is the root value of
    # a fresh search with the target network (needs Reanalyze with reanalyse_bootstrap "search").
    off_policy_correction: bool = False
    off_policy_age_ratio: float = 0.3

    def validate(self):
        _positive("muzero.value_prefix_horizon", self.value_prefix_horizon)
        _positive("muzero.off_policy_age_ratio", self.off_policy_age_ratio)
        if self.off_policy_correction and not (
            self.reanalyse_fraction > 0 and self.reanalyse_bootstrap == "search" and self.reanalyse_targets != "policy"
        ):
            raise UsageError(
                "muzero.off_policy_correction bootstraps from a fresh search: it needs "
                'muzero.reanalyse_fraction > 0, muzero.reanalyse_bootstrap="search" and '
                'muzero.reanalyse_targets "both" or "value"'
            )
        _positive("muzero.consistency_weight", self.consistency_weight, allow_zero=True)
        if self.dynamics_blocks < -1:
            raise UsageError(f"muzero.dynamics_blocks must be -1 (as net.blocks) or >= 0, not {self.dynamics_blocks}")
        if self.consistency_terminal and not self.consistency_weight:
            raise UsageError("muzero.consistency_terminal needs the consistency loss (muzero.consistency_weight > 0)")
        _positive("muzero.reanalyse_c_scale", self.reanalyse_c_scale, allow_zero=True)
        _positive("muzero.chunk_length", self.chunk_length, allow_zero=True)
        for k in ("unroll_steps", "td_steps", "hidden_size", "target_update_every"):
            _positive(f"muzero.{k}", getattr(self, k))
        _positive("muzero.support", self.support, allow_zero=True)
        _fraction("muzero.discount", self.discount)
        _positive("muzero.value_loss_weight", self.value_loss_weight)
        _choice("muzero.prioritized", self.prioritized, ("auto", "on", "off"))
        _choice("muzero.priority_value", self.priority_value, ("search", "network"))
        _choice("muzero.downsample", self.downsample, ("auto", "on", "off"))
        _choice("muzero.unroll_norm", self.unroll_norm, ("batch", "layer"))
        _choice("muzero.action_planes", self.action_planes, ("game", "cell"))
        _choice("muzero.reanalyse_network", self.reanalyse_network, ("latest", "target"))
        _choice("muzero.reanalyse_targets", self.reanalyse_targets, ("both", "policy", "value"))
        _choice("muzero.reanalyse_bootstrap", self.reanalyse_bootstrap, ("network", "search"))
        _positive("muzero.priority_alpha", self.priority_alpha, allow_zero=True)
        _positive("muzero.priority_beta", self.priority_beta, allow_zero=True)
        _fraction("muzero.reanalyse_fraction", self.reanalyse_fraction)


REANALYSE_KEYS = (
    "target_update_every",
    "reanalyse_network",
    "reanalyse_targets",
    "reanalyse_c_scale",
    "reanalyse_bootstrap",
)


# Keys only a game of one player reads (a board game's value target is its outcome, its
# support 0, its episodes whole) and keys only a board game reads.
ONE_PLAYER_KEYS = ("discount", "td_steps", "support", "chunk_length", "temperature_schedule", "reanalyse_bootstrap")
BOARD_GAME_KEYS = ("terminal_reward", "terminal_value", "consistency_terminal")
PRIORITY_KEYS = ("priority_alpha", "priority_beta", "priority_value")


def unread(cfg) -> dict[str, str]:
    """The keys a run does not read: the Reanalyze keys without Reanalyze (only its
    Reanalyser reads them), the one-player keys on a board game and the board-game keys
    on a one-player game, and the priority keys under uniform replay."""
    mz, out = cfg.muzero, {}
    if mz.reanalyse_fraction == 0:
        out.update({f"muzero.{key}": "it applies with muzero.reanalyse_fraction > 0 only" for key in REANALYSE_KEYS})
    game_type = registered_type(cfg.game)
    one_player = None  # unknown, or the number of players a parameter (pathfinding: 1 to 10)
    if game_type is not None and game_type.max_num_players == 1:
        one_player = True
    elif game_type is not None and game_type.min_num_players >= 2:
        one_player = False
    if one_player is False:
        why = f"{cfg.game} is a board game, whose value target is its final outcome"
        out.update({f"muzero.{key}": why for key in ONE_PLAYER_KEYS})
    elif one_player:
        out.update({f"muzero.{key}": f"{cfg.game} is a game of one player" for key in BOARD_GAME_KEYS})
    if mz.prioritized == "off" or (mz.prioritized == "auto" and one_player is False):
        why = "replay is uniform (muzero.prioritized is 'auto' on a board game, or 'off')"
        out.update({f"muzero.{key}": why for key in PRIORITY_KEYS})
    return out


SECTION = ConfigSection("muzero", MuZeroConfig, algos=("muzero",), unread=unread)
