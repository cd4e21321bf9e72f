"""The writer over the view: publishing, moves, recovery of dead writers' operations."""
