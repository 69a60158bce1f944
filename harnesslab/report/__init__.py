"""Output: plots and HTML, built from records only."""
