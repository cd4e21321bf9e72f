"""The optional embedding lane (extra sediment[semantic])."""
