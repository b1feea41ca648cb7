"""One module per command; each a thin shell over the wing that does the work."""
