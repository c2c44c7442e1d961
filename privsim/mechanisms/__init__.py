"""privsim.mechanisms."""
