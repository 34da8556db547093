"""Errors a user can cause. The CLI prints their message on one line and exits 2."""


class UsageError(Exception):
    """Bad input from the user: an unknown game, a bad config key, a corrupt checkpoint.

    The message is one line that names what is wrong; no traceback is shown.
    """
