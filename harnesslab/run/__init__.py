"""Driving one run: the runner, the doors a harness gets, instances, executors, the suite summary."""
