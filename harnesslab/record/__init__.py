"""The record, the product: writing and reading run records, showing a call, the sweep table."""
