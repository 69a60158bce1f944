"""Studies of a harness or of the bench itself: the bug zoo, fidelity, agreement, tokens, session stores."""
