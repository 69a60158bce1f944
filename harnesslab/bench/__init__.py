"""Evaluation: scenarios, runner, record, checks, metrics."""
