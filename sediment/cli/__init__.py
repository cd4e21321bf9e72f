"""The `sediment` command line."""
