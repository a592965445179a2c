"""The top of the middle-end: ``me.Function`` with its verbs (lower, layers, compile), the
``middleend`` command, the papers' example programs and the demo."""
