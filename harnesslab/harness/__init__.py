"""The reference harness: the system under test."""
