"""The optional embedding lane (extra [semantic])."""
