"""One exception type for every problem a user can fix: its message is one line."""


class GenotileError(Exception):
    """A clear, one-line error about the user's input or configuration."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
