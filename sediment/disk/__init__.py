"""Bytes on disk: atomic files, checked replaces, the journal, the vault walk, usage records, the policy file."""
