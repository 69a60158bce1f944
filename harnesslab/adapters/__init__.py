"""Real harnesses behind the reference harness's interface, imported lazily."""
