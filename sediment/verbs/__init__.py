"""The core verbs: reads, writes, metabolism, health, adopt."""
