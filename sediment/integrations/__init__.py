"""Backends that let other tools' memory interfaces store into a sediment root
(``anthropic``: Anthropic's memory tool)."""
