"""Errors the CLI reports on one line, without a traceback."""


class UsageError(Exception):
    """Bad input from the user: an unknown game, a bad config key, a corrupt checkpoint.

    The message is one line that names what is wrong; no traceback is shown.
    """


class RunStopped(Exception):
    """A run stopped on a failure it does not recover from (a learner that keeps dying);
    its last checkpoint is intact. The CLI prints the message and exits 1."""
