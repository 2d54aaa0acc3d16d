from .patterns import *  # noqa: F403


def squash(text):
    """Trim and collapse runs of whitespace to one space."""
    return SPACES.sub(" ", text.strip())  # noqa: F405
