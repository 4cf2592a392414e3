"""Scoring's one error (``TaskError``): the readers of a method's output (``results``) and the
tasks raise it alike."""

from regionbench.core.errors import InputError


class TaskError(InputError):
    """Predictions or settings a task cannot score; the message says what, where and how to fix
    it, one line per problem."""
