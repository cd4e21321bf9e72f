"""What is in memory and how it is kept: the view of a root, loading it, the body store, the watcher."""
