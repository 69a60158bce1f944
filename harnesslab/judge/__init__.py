"""Judgement from the record: the checks, the variant verdicts and the metrics."""
