"""Every harness the bench can put under test, chosen by name: the registry and the bug zoo."""
