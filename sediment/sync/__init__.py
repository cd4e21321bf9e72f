"""Git: sync between machines, the note merge, repairs after a merge."""
